"""Idle-thread digests: find idle threads, claim each once, summarise, validate, post.

Several bot processes may share one database: a thread is claimed with a lease (one
guarded UPDATE), so exactly one process digests it. The holder renews the lease while it
works and re-checks it between steps and just before posting, so a slow summary never
lets a peer take the thread from a live process; a lease whose process stopped beating
(or expired) is taken over and the thread picked up again. A digest is stored once per
`(session, last event)`, before it is posted: a process that finds it stored posts only
the pages nobody did, looking for them in the lead channel first in case a process died
between posting and recording them (`bot.digests.posting`).
Only a validated record is ever posted; otherwise the support-lead channel gets a short
"summary unavailable" notice and the thread is flagged for a person. The notice is
stored first too (a digest row of kind `unavailable`), so it is posted once.
A thread has one message in the lead channel: a later digest or notice of the same
thread updates it in place, with a note of what changed (`bot.digests.changes`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from agents.base_agent import BaseAgent
from agents.compaction import COMPACTION_AUTHOR
from agents.events import Event
from agents.handoff import HANDOFF_AUTHOR
from agents.metrics import REGISTRY
from agents.runner import reply_owner_name
from agents.summary import NoSummary, Summary
from agents.summary.incremental import NO_VALUES
from agents.summary.metrics import count_delivery
from agents.summary.record import HandoffRecord, Item
from agents.summary.results import WindowGap
from agents.summary.windows import summarised_events
from bot.digests.changes import update_note
from bot.digests.posting import DigestPoster, StoredDigest, post_digest
from bot.slack.permalinks import ThreadLinks, thread_links
from bot.slack.render.digest_blocks import digest_message, unavailable_message
from bot.slack.render.limits import Block
from bot.threads.admission import Priority, PriorityLimit
from bot.threads.summaries import Summarizer, public_problems
from storage.database import Database
from storage.summaries.digests import DigestRow
from storage.summaries.memory import MemoryKind
from storage.threads import ThreadRecord

# What a digest's record covers (`SUMMARY_MODE=incremental`): its gaps, how many windows
# it merged, and the tail it left unsummarised.
Coverage = tuple[Sequence[WindowGap], int, WindowGap | None]

logger = logging.getLogger(__name__)

REGISTRY.describe(
    "support_bot_digests_unavailable_total", "counter", "Digests with no valid summary"
)

DigestStatus = Literal["posted", "stored", "unavailable", "already_posted"]


def owning_agents(events: Sequence[Event], root: BaseAgent | None = None) -> list[str]:
    """Agents that answered in the thread, in the order they first did; under the tree
    `root`, each answer is named by the agent that owns it (`reply_owner_name`: a pipeline's
    steps answer as their workflow, never as `diagnose` or `fix_writer`)."""
    seen: list[str] = []
    for event in events:
        if event.author in ("user", COMPACTION_AUTHOR, HANDOFF_AUTHOR):
            continue
        if event.error_code or not event.text or not event.is_final_response():
            continue
        owner = reply_owner_name(root, event.author) if root is not None else event.author
        if owner not in seen:
            seen.append(owner)
    return seen


class LeaseLost(RuntimeError):
    """Another process holds the thread's lease now: stop without posting."""


@dataclass
class DigestOutcome:
    """What one pass did for one thread."""

    channel_id: str
    thread_ts: str
    outcome: DigestStatus
    digest_id: int | None = None
    slack_ts: str | None = None
    problems: list[str] = field(default_factory=list)
    goal: str | None = None


class DigestJob:
    """One digest pass over the idle threads (`run_once`); the scheduler repeats it.

    `owner` is the process's identity (`bot.wiring.process_owner`), held on each lease.
    `limit`, in a running bot, is the slot count replies and commands share: a digest
    holds one of its slots while it summarises, behind any waiting reply.
    `dead_after`: a lease whose owner has not beaten for this long is free (None: only
    expiry frees a lease). `root`: the agent tree the threads ran on, which names the
    agents that own their replies (`owning_agents`; None: each reply's author).
    """

    def __init__(
        self,
        *,
        db: Database,
        summarizer: Summarizer,
        client: DigestPoster,
        lead_channel: str | None,
        idle_after: float,
        owner: str,
        concurrency: int = 8,
        lease_seconds: float = 600.0,
        batch: int = 200,
        dead_after: float | None = None,
        clock: Callable[[], float] = time.time,
        limit: PriorityLimit | None = None,
        root: BaseAgent | None = None,
    ) -> None:
        self.db = db
        self.root = root
        self.summarizer = summarizer
        self.client = client
        self.lead_channel = lead_channel
        self.idle_after = idle_after
        self.lease_seconds = lease_seconds
        self.batch = batch
        self.clock = clock
        self.owner = owner
        self.dead_after = dead_after
        self._slots = asyncio.Semaphore(concurrency)
        # The process's shared work limit, where replies go first (`bot.threads.admission`).
        self._limit = limit

    async def run_once(self) -> list[DigestOutcome]:
        """Digest every idle thread this process can claim; return what happened."""
        idle = await self.db.threads.find_idle(
            now=self.clock(),
            idle_after=self.idle_after,
            limit=self.batch,
            dead_after=self.dead_after,
        )
        results = await asyncio.gather(*(self._guarded(thread) for thread in idle))
        return [r for r in results if r is not None]

    async def _guarded(self, thread: ThreadRecord) -> DigestOutcome | None:
        async with self._slots:
            claimed = await self.db.threads.claim(
                thread.key,
                owner=self.owner,
                now=self.clock(),
                lease_seconds=self.lease_seconds,
                dead_after=self.dead_after,
            )
            if not claimed:
                return None
            renewer = asyncio.create_task(self._keep_renewed(thread))
            try:
                if self._limit is None:
                    return await self._digest(thread)
                async with self._limit.slot(Priority.DIGEST):
                    return await self._digest(thread)
            except LeaseLost:
                logger.warning("digest lease of %s lost to a peer", thread.thread_ts)
                return None
            except Exception:
                # The lease is released without progress, so the next pass retries.
                logger.exception("digest of %s/%s failed", thread.channel_id, thread.thread_ts)
                await self.db.threads.release(thread.key, owner=self.owner)
                return None
            finally:
                renewer.cancel()

    async def _renew(self, thread: ThreadRecord) -> None:
        """Extend the lease, or raise `LeaseLost` when a peer holds it now."""
        renewed = await self.db.threads.renew(
            thread.key, owner=self.owner, now=self.clock(), lease_seconds=self.lease_seconds
        )
        if not renewed:
            raise LeaseLost(thread.thread_ts)

    async def _keep_renewed(self, thread: ThreadRecord) -> None:
        """Renew the lease every third of its length while a step (a slow summary) runs,
        so it never expires under a live holder."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                await self._renew(thread)
            except LeaseLost:
                return
            except Exception:
                logger.warning("digest lease renewal failed", exc_info=True)

    async def _digest(self, thread: ThreadRecord) -> DigestOutcome:
        session = await self.db.sessions.of_thread(thread)
        if session is None or not session.events:
            await self.db.threads.release(thread.key, owner=self.owner)
            raise LookupError(f"thread {thread.thread_ts} maps to missing session")
        last_seq = max(e.seq for e in session.events)
        stored = await self.db.digests.for_event(session.id, last_seq)
        if stored is not None:
            # Another process (or a crashed one) stored this digest: finish, don't redo it.
            return await self._publish(thread, stored, session.events, resume=True)
        previous = await self.db.digests.latest_for_session(session.id)
        result = await self.summarizer.summarize(session)
        await count_delivery(result, "digest", self.db.summary_deliveries)
        await self._renew(thread)
        add = functools.partial(
            self.db.digests.add,
            source_session_id=session.id,
            thread=thread.key,
            user_id=thread.user_id,
            supersedes_digest_id=previous.id if previous is not None else None,
            created_at=self.clock(),
            last_seq=last_seq,
        )
        if isinstance(result, NoSummary) or not isinstance(result, Summary):
            REGISTRY.inc("support_bot_digests_unavailable_total")
            problems = [str(p) for p in result.problems]
            await self.db.threads.flag(
                thread.key, "summary unavailable: " + "; ".join(problems)[:500]
            )
            # The notice's durable intent: posted once, like a digest, even across a crash.
            notice_id = await add(record={}, kind="unavailable", problems=problems, attempts=0)
            return await self._publish(thread, await self._row(notice_id), session.events)
        record = result.record
        digest_id = await add(
            record=record,
            cited_event_ids=record.cited_ids(),
            attempts=result.attempts,
            problems=[str(p) for p in result.problems_first_attempt],
            cost=result.usage.cost,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
        )
        remembered: tuple[tuple[MemoryKind, list[Item]], ...] = (
            ("fact", record.facts),
            ("commitment", record.commitments),
        )
        for kind, items in remembered:
            for item in items:
                await self.db.memory.add(
                    user_id=thread.user_id,
                    session_id=session.id,
                    kind="claim" if item.user_claim else kind,
                    text=item.text,
                    event_ids=list(item.sources),
                )
        return await self._publish(
            thread,
            await self._row(digest_id),
            session.events,
            gaps=(result.gaps, result.windows, result.unsummarised),
        )

    async def _row(self, digest_id: int) -> DigestRow:
        row = await self.db.digests.get(digest_id)
        if row is None:
            raise LookupError(f"digest {digest_id} vanished")  # deleted by `forget` meanwhile
        return row

    async def _publish(
        self,
        thread: ThreadRecord,
        stored: DigestRow,
        events: Sequence[Event],
        *,
        resume: bool = False,
        gaps: Coverage | None = None,
    ) -> DigestOutcome:
        """Post a stored digest or notice as the thread's one lead-channel message (an
        update of the message an earlier digest of the thread was posted as, if any),
        then release the thread. `resume`: stored by an earlier pass that may have
        posted part of it."""
        notice = stored.kind == "unavailable"
        fresh: DigestStatus = "unavailable" if notice else "stored"
        outcome = DigestOutcome(
            thread.channel_id,
            thread.thread_ts,
            "already_posted" if resume else fresh,
            None if notice else stored.id,
            problems=list(stored.problems) if notice else [],
        )
        if not notice:
            outcome.goal = HandoffRecord.model_validate(stored.record).goal
        if self.lead_channel:
            shown = await self.db.digests.thread_message(stored.source_session_id, before=stored.id)
            note = (
                update_note(shown[0], None if notice else _record(stored), events)
                if shown
                else None
            )
            links = await thread_links(self.client, thread.channel_id, thread.thread_ts)
            if notice:
                problems = public_problems(tuple(stored.problems))
                text, blocks = unavailable_message(links, problems, update_note=note)
            else:
                text, blocks = await self._digest_message(thread, stored, events, links, note, gaps)
            digest = StoredDigest(stored.id, stored.source_session_id, stored.created_at)
            posted = await post_digest(
                self.client,
                self.db,
                digest,
                channel=self.lead_channel,
                text=text,
                blocks=blocks,
                before_post=lambda: self._renew(thread),
                resume=resume,
                replaces=shown[1] if shown else None,
            )
            outcome.slack_ts = posted.first_ts
            if posted.new_pages:
                outcome.outcome = fresh if notice else "posted"
                if not notice:
                    REGISTRY.inc("support_bot_digests_posted_total")
        # Progress is recorded either way, so a failing thread isn't re-summarised every
        # scan; new activity makes it eligible again.
        await self.db.threads.release(
            thread.key,
            owner=self.owner,
            digested_seq=stored.last_seq,
            digest_id=None if notice else stored.id,
        )
        return outcome

    async def _digest_message(
        self,
        thread: ThreadRecord,
        stored: DigestRow,
        events: Sequence[Event],
        links: ThreadLinks,
        note: str | None,
        gaps: Coverage | None,
    ) -> tuple[str, list[Block]]:
        """The digest's message; a re-post names the gaps of the windows it merged, as
        the first post would have. Its feedback counts the sessions its session was handed
        off from too (a hand-off's new session starts where the old one left)."""
        if gaps is None:
            gaps = await self._stored_gaps(stored.source_session_id, stored.last_seq or 0, events)
        return digest_message(
            _record(stored),
            events=events,
            links=links,
            owners=owning_agents(events, self.root),
            cost=stored.cost,
            attempts=stored.attempts,
            update_note=note,
            gaps=gaps[0],
            windows=gaps[1],
            unsummarised=gaps[2],
            feedback=await self.db.feedback.for_session_chain(
                app_name=thread.app_name,
                user_id=thread.user_id,
                session_id=stored.source_session_id,
            ),
        )

    async def _stored_gaps(
        self, session_id: str, last_seq: int, events: Sequence[Event]
    ) -> Coverage:
        """The gaps and window count of the stored windows (`SUMMARY_MODE=incremental`) a
        digest through `last_seq` merged, and the tail it left unsummarised (the events
        after the last stored window: a digest stores every window it summarises); none
        in `whole` mode, which stores no windows."""
        windows = [
            w for w in await self.db.windows.windows(session_id) if w.span.end_seq <= last_seq
        ]
        gaps = [
            WindowGap(w.span.start_id, w.span.end_id, w.problems)
            for w in windows
            if w.record is None
        ]
        end = max((w.span.end_seq for w in windows), default=None)
        tail = (
            [] if end is None else [e for e in summarised_events(events) if end < e.seq <= last_seq]
        )
        unsummarised = WindowGap(tail[0].id, tail[-1].id, (NO_VALUES,)) if tail else None
        return gaps, len(windows), unsummarised


def _record(row: DigestRow) -> HandoffRecord:
    return HandoffRecord.model_validate(row.record)
