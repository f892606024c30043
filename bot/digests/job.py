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
"summary unavailable" notice and the thread is flagged for a person.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from agents.compaction import COMPACTION_AUTHOR
from agents.events import Event
from agents.handoff import HANDOFF_AUTHOR
from agents.metrics import REGISTRY
from agents.summary import NoSummary, Summary
from agents.summary.record import HandoffRecord, Item
from agents.summary.results import WindowGap
from bot.digests.posting import DigestPoster, Posted, StoredDigest, post_digest
from bot.slack.permalinks import ThreadLinks, thread_links
from bot.slack.render.blocks import Block, digest_message, unavailable_message
from bot.slack.render.limits import post_paged
from bot.threads.admission import Priority, PriorityLimit
from bot.threads.summaries import Summarizer, public_problems
from storage.database import Database
from storage.summaries.digests import DigestRow
from storage.summaries.memory import MemoryKind
from storage.threads import ThreadRecord

logger = logging.getLogger(__name__)

REGISTRY.describe(
    "support_bot_digests_unavailable_total", "counter", "Digests with no valid summary"
)

DigestStatus = Literal["posted", "stored", "unavailable", "already_posted"]


def owning_agents(events: Sequence[Event]) -> list[str]:
    """Agents that answered in the thread, in the order they first did."""
    seen: list[str] = []
    for event in events:
        if event.author in ("user", COMPACTION_AUTHOR, HANDOFF_AUTHOR):
            continue
        if event.error_code or not event.text:
            continue
        if event.is_final_response() and event.author not in seen:
            seen.append(event.author)
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
    expiry frees a lease).
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
    ) -> None:
        self.db = db
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

    async def _post(self, thread: ThreadRecord, text: str, blocks: list[Block]) -> str:
        """Post a notice to the lead channel (paged within Slack's limits), after
        re-checking the lease right before; the first message's ts."""
        assert self.lead_channel is not None
        await self._renew(thread)
        return await post_paged(self.client, channel=self.lead_channel, text=text, blocks=blocks)

    async def _post_digest(
        self,
        thread: ThreadRecord,
        digest: StoredDigest,
        text: str,
        blocks: list[Block],
        *,
        resume: bool,
    ) -> Posted:
        """Post the digest's missing pages (`bot.digests.posting`), re-checking the lease
        before each."""
        assert self.lead_channel is not None
        posted = await post_digest(
            self.client,
            self.db,
            digest,
            channel=self.lead_channel,
            text=text,
            blocks=blocks,
            before_post=lambda: self._renew(thread),
            resume=resume,
        )
        if posted.new_pages:
            REGISTRY.inc("support_bot_digests_posted_total")
        return posted

    async def _digest(self, thread: ThreadRecord) -> DigestOutcome:
        session = await self.db.sessions.of_thread(thread)
        if session is None or not session.events:
            await self.db.threads.release(thread.key, owner=self.owner)
            raise LookupError(f"thread {thread.thread_ts} maps to missing session")
        last_seq = max(e.seq for e in session.events)
        stored = await self.db.digests.for_event(session.id, last_seq)
        if stored is not None:
            # Another process (or a crashed one) stored this digest: finish, don't redo it.
            return await self._finish_stored(thread, stored, last_seq)
        previous = await self.db.digests.latest_for_session(session.id)
        result = await self.summarizer.summarize(session)
        await self._renew(thread)
        created_at = self.clock()
        if isinstance(result, NoSummary) or not isinstance(result, Summary):
            return await self._unavailable(thread, [str(p) for p in result.problems], last_seq)
        record = result.record
        digest_id = await self.db.digests.add(
            record=record,
            source_session_id=session.id,
            thread=thread.key,
            user_id=thread.user_id,
            cited_event_ids=record.cited_ids(),
            attempts=result.attempts,
            problems=[str(p) for p in result.problems_first_attempt],
            cost=result.usage.cost,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            supersedes_digest_id=previous.id if previous is not None else None,
            created_at=created_at,
            last_seq=last_seq,
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
        outcome = DigestOutcome(
            thread.channel_id, thread.thread_ts, "stored", digest_id, goal=record.goal
        )
        if self.lead_channel:
            links = await thread_links(self.client, thread.channel_id, thread.thread_ts)
            text, blocks = digest_message(
                record,
                events=session.events,
                links=links,
                owners=owning_agents(session.events),
                cost=result.usage.cost,
                attempts=result.attempts,
                previous_link=self._lead_link(links, previous.slack_ts if previous else None),
                gaps=result.gaps,
                windows=result.windows,
                feedback=await self.db.feedback.for_session(session.id),
            )
            new = StoredDigest(digest_id, session.id, created_at)
            posted = await self._post_digest(thread, new, text, blocks, resume=False)
            outcome.slack_ts, outcome.outcome = posted.first_ts, "posted"
        await self.db.threads.release(
            thread.key, owner=self.owner, digested_seq=last_seq, digest_id=digest_id
        )
        return outcome

    def _lead_link(self, links: ThreadLinks, ts: str | None) -> str | None:
        """A link to an earlier digest message in the lead channel."""
        if ts is None or self.lead_channel is None:
            return None
        base = links.thread_link.split("/archives/", 1)[0]
        return f"{base}/archives/{self.lead_channel}/p{ts.replace('.', '')}"

    async def _finish_stored(
        self, thread: ThreadRecord, stored: DigestRow, last_seq: int
    ) -> DigestOutcome:
        outcome = DigestOutcome(thread.channel_id, thread.thread_ts, "already_posted", stored.id)
        if self.lead_channel:
            links = await thread_links(self.client, thread.channel_id, thread.thread_ts)
            session = await self.db.sessions.of_thread(thread)
            record = HandoffRecord.model_validate(stored.record)
            events = session.events if session else []
            gaps, windows = await self._stored_gaps(stored.source_session_id, last_seq)
            text, blocks = digest_message(
                record,
                events=events,
                links=links,
                owners=owning_agents(events),
                cost=stored.cost,
                attempts=stored.attempts,
                gaps=gaps,
                windows=windows,
                feedback=await self.db.feedback.for_session(stored.source_session_id),
            )
            # A process may have died after posting (some of) it: resume, never repeat.
            digest = StoredDigest(stored.id, stored.source_session_id, stored.created_at)
            posted = await self._post_digest(thread, digest, text, blocks, resume=True)
            outcome.slack_ts = posted.first_ts
            if posted.new_pages:
                outcome.outcome = "posted"
        await self.db.threads.release(
            thread.key, owner=self.owner, digested_seq=last_seq, digest_id=stored.id
        )
        return outcome

    async def _stored_gaps(self, session_id: str, last_seq: int) -> tuple[list[WindowGap], int]:
        """The gaps and window count of the stored windows (`SUMMARY_MODE=incremental`) a
        digest through `last_seq` merged, so its re-post names them as the first post
        would have; none in `whole` mode, which stores no windows."""
        windows = [
            w for w in await self.db.windows.windows(session_id) if w.span.end_seq <= last_seq
        ]
        gaps = [
            WindowGap(w.span.start_id, w.span.end_id, w.problems)
            for w in windows
            if w.record is None
        ]
        return gaps, len(windows)

    async def _unavailable(
        self, thread: ThreadRecord, problems: list[str], last_seq: int
    ) -> DigestOutcome:
        REGISTRY.inc("support_bot_digests_unavailable_total")
        await self.db.threads.flag(thread.key, "summary unavailable: " + "; ".join(problems)[:500])
        outcome = DigestOutcome(
            thread.channel_id, thread.thread_ts, "unavailable", problems=problems
        )
        if self.lead_channel:
            links = await thread_links(self.client, thread.channel_id, thread.thread_ts)
            text, blocks = unavailable_message(links, public_problems(tuple(problems)))
            outcome.slack_ts = await self._post(thread, text, blocks)
        # Progress is recorded so a failing thread isn't re-summarised every scan; new
        # activity makes it eligible again.
        await self.db.threads.release(thread.key, owner=self.owner, digested_seq=last_seq)
        return outcome
