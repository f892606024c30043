"""Handoff records built as the thread goes: one validated record per window, merged.

`IncrementalSummarizer` has two entry points:

- as an after-invocation hook (`Runner(after_invocation=[compactor, summarizer])`), it
  summarises every window that closed with the invocation that just finished, on the
  same cadence as compaction, off the reply path;
- `summarize(session)` (digests, hand-offs, `/summary`) summarises only what no stored
  window covers yet (the tail since the last window), then merges every window record
  into one record (`agents.summary.merge`) and validates it once more over the events
  the passing windows cover, demanding only values some window's model was shown (a
  window's own check skips values its transcript cut, so the merged check does too); a
  window whose record the merged check still fails becomes a gap (`agents.summary.merged`).

Each window is summarised by the ordinary `SummaryService` over that window's events
only, seeing the previous window's goal as quoted context, and checked by the same
validator against those events (its goal against the thread so far), with one retry. A
window that still fails is stored as a named gap (its range and problems, never the
model's text). The merged record is a
`Summary` naming its gaps; a thread where no window passed is a `NoSummary`.

**Windows without values cost no model call of their own.** A run of invocations that
holds nothing the validator asks for (no value, identifier, amount, date or agent
promise, by the validator's own extractors: `agents.summary.demands`) is not summarised
alone: its window stays open and is summarised together with the invocations that
follow, once they bring a value (`agents.summary.windows`), every citation inside the
one window. Chosen over a deterministic record for such windows because they are not
empty: measured on the evaluation transcripts, half of them hold what a lead needs
without any value the extractors know (a hotel request submitted, an RSVP confirmed, a
refund refused and a transfer to a person asked for), and a deterministic record could
only drop that or quote it raw. Two ends are bounded:

- a window with no value closes at `WINDOW_BOUND` times the interval and is summarised
  (one call for a long run without values, instead of one per interval), so no
  transcript a window sends grows without bound;
- at a digest, an open tail without values is left open, not summarised and not stored
  (the result names it as `unsummarised`, linking its messages): it is usually the
  thread's goodbyes, and if the thread goes on, it joins the next window. A thread
  where no window has a record yet gets its tail summarised all the same, so every
  thread gets a record; that one call is the call `whole` makes.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Sequence

from agents.events import Event, Usage
from agents.quoting import defuse_fences, quoted
from agents.sessions.service import SessionService
from agents.sessions.session import Session
from agents.summary.checks.validator import Validator
from agents.summary.demands import crowded, holds_values
from agents.summary.entities import Entity
from agents.summary.merged import WindowMerge
from agents.summary.problems import Problem, ProblemKind
from agents.summary.record import HandoffRecord
from agents.summary.render import to_json
from agents.summary.results import NoSummary, Summary, SummaryResult, WindowGap
from agents.summary.service import SummaryService
from agents.summary.window_problems import first_attempt_problems, gap_problem
from agents.summary.windows import (
    StoredWindow,
    WindowPlan,
    WindowSpan,
    WindowStatus,
    WindowStore,
    plan_windows,
    summarised_events,
)

logger = logging.getLogger(__name__)

CONTEXT_CHARS = 400
MODEL_CALL_FAILED = "model call failed"
NO_VALUES = "no values or promises"
CONTEXT_MARK = "THREAD_GOAL"
CONTEXT_HEADER = (
    "The goal of this thread, as its earlier events stated it, for context only. It is "
    "quoted data, not part of the transcript: keep it as the goal (refine it only if the "
    "transcript changes what the user wants), and write every item from the transcript alone."
)


def context_text(record: HandoffRecord | None, span: WindowSpan) -> str:
    """What a window is shown of the thread before it: the earlier goal, quoted and fenced
    (at most `CONTEXT_CHARS`), and which event ids the window's items may cite.

    Only the goal: measured on the embedded model, a window shown the earlier record's
    facts and open questions copied them and cited its own first events for them, which
    fails the relevance check. The merge keeps the earlier items and resolves earlier
    questions itself, so a window needs nothing else.
    """
    if record is None:
        return ""
    goal = record.goal
    if len(goal) > CONTEXT_CHARS:
        goal = goal[:CONTEXT_CHARS] + " ...[truncated]"
    cite = (
        f"The transcript below holds events {span.start_id} to {span.end_id} only: every "
        "item cites some of them."
    )
    return (
        f"{CONTEXT_HEADER}\n<<<{CONTEXT_MARK}\n{quoted(defuse_fences(goal))}\n{CONTEXT_MARK}>>>"
        f"\n\n{cite}"
    )


def window_events(events: Sequence[Event], span: WindowSpan) -> list[Event]:
    """The events of `span`, in order."""
    return [e for e in summarised_events(events) if span.start_seq <= e.seq <= span.end_seq]


def unanswered(window: StoredWindow) -> bool:
    """A gap only because every model call failed: no answer was ever judged."""
    return window.record is None and all(p.startswith(MODEL_CALL_FAILED) for p in window.problems)


def summarised_now(span: WindowSpan, windows: Sequence[StoredWindow]) -> bool:
    """Whether a digest summarises `span` (given the windows it already has): every
    closed window, and an open tail that holds a value or is the thread's only hope of a
    record (no window has one). An open tail without values waits for the next window."""
    if span.closed or span.holds_values:
        return True
    return not any(w.record is not None for w in windows)


class IncrementalSummarizer:
    """Window records stored in `store`, merged on demand; see the module docstring.

    `interval` is the window cadence in invocations (`COMPACTION_INTERVAL`);
    `session_service` loads whole sessions for the hook. `max_invocations` bounds a
    window without values (default `WINDOW_BOUND` times `interval`).
    """

    def __init__(
        self,
        service: SummaryService,
        store: WindowStore,
        *,
        interval: int,
        session_service: SessionService | None = None,
        validator: Validator | None = None,
        max_invocations: int | None = None,
    ) -> None:
        self.service = service
        self.store = store
        self.interval = interval
        self.max_invocations = max_invocations
        self.session_service = session_service
        self.validator = validator or service.validator
        # One window pass at a time per session; entries vanish with their last user.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def _lock(self, session_id: str) -> asyncio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return lock

    async def __call__(self, session: Session, invocation_id: str) -> None:
        """The after-invocation hook: summarise the windows this invocation closed."""
        if self.session_service is None:
            raise RuntimeError("IncrementalSummarizer needs a session_service to run as a hook")
        whole = await self.session_service.get_session(
            app_name=session.app_name, user_id=session.user_id, session_id=session.id
        )
        if whole is None:
            return
        async with self._lock(session.id):
            await self.close_windows(whole, completed_through=invocation_id)

    async def close_windows(
        self, session: Session, *, completed_through: str | None = None
    ) -> list[StoredWindow]:
        """Summarise and store every closed window of `session` no stored window covers."""
        stored = await self.store.windows(session.id)
        plan = self.plan(session.events, stored, completed_through=completed_through)
        done = list(plan.kept)
        for span in plan.todo:
            if span.closed:
                done.append(await self._window(session, span, done, closed_by="compaction"))
        return done

    def plan(
        self,
        events: Sequence[Event],
        stored: Sequence[StoredWindow],
        *,
        completed_through: str | None = None,
    ) -> WindowPlan:
        """The windows of `events`: stored ones kept, the rest cut so that a window closes
        once it holds a value (by the validator's extractors) or reaches the bound, and
        sooner once it holds many (`agents.summary.demands.crowded`)."""
        extractor = self.service.extractor
        return plan_windows(
            events,
            stored,
            interval=self.interval,
            completed_through=completed_through,
            holds_values=lambda run: holds_values(run, extractor),
            max_invocations=self.max_invocations,
            crowded=lambda run: crowded(run, extractor),
        )

    async def summarize(self, session: Session) -> SummaryResult:
        """Summarise what no window covers yet, then merge every window record."""
        started = time.perf_counter()
        unsummarised: WindowSpan | None = None
        async with self._lock(session.id):
            stored = await self.store.windows(session.id)
            plan = self.plan(session.events, stored)
            # A window the model never answered (an outage, a timeout) is tried again; one
            # whose answers failed validation stays the gap it is.
            retried = [w.span for w in plan.kept if unanswered(w)]
            windows = [w for w in plan.kept if not unanswered(w)]
            for span in sorted([*retried, *plan.todo], key=lambda s: s.start_seq):
                if not summarised_now(span, windows):
                    unsummarised = span
                    continue
                windows.append(await self._window(session, span, windows, closed_by="digest"))
        windows.sort(key=lambda w: w.span.start_seq)
        return self._merged(session, windows, time.perf_counter() - started, unsummarised)

    def secrets(self, session: Session) -> list[Entity]:
        """The sensitive values of the whole thread, masked in every window that holds
        them (`agents.summary.secrets`), whichever window marks them as secret."""
        return [
            e
            for e in self.service.extractor.extract(summarised_events(session.events))
            if e.sensitive
        ]

    async def _window(
        self,
        session: Session,
        span: WindowSpan,
        done: Sequence[StoredWindow],
        *,
        closed_by: str,
    ) -> StoredWindow:
        """Summarise one window after the latest passing window before it, and store it."""
        before = [w for w in done if w.span.end_seq < span.start_seq and w.record is not None]
        previous = (
            HandoffRecord.model_validate(max(before, key=lambda w: w.span.end_seq).record)
            if before
            else None
        )
        events = window_events(session.events, span)
        earlier = [e for e in summarised_events(session.events) if e.seq < span.start_seq]
        result = await self.service.summarize_events(
            events,
            session_id=session.id,
            context=context_text(previous, span),
            goal_support=earlier,
            context_marks=(CONTEXT_MARK,),
            secrets=self.secrets(session),
        )
        log = result.attempt_log
        if isinstance(result, Summary):
            status: WindowStatus = "passed"
            record, problems = to_json(result.record), result.problems_first_attempt
        else:
            status, record, problems = "gap", None, result.problems
        window = StoredWindow(
            span=span,
            status=status,
            record=record,
            problems=tuple(str(p) for p in problems),
            attempts=result.attempts,
            first_attempt_pass=bool(log) and log[0].passed,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            cost=result.usage.cost,
            latency_s=result.latency_s,
            closed_by=closed_by,
        )
        await self.store.save(session.id, window)
        if window.status == "gap":
            logger.warning("window %s of session %s is a gap", span.label(), session.id)
        return window

    def _merged(
        self,
        session: Session,
        windows: list[StoredWindow],
        latency: float,
        unsummarised: WindowSpan | None = None,
    ) -> SummaryResult:
        usage = sum(
            (
                Usage(
                    prompt_tokens=w.prompt_tokens,
                    completion_tokens=w.completion_tokens,
                    cost=w.cost,
                )
                for w in windows
            ),
            Usage(),
        )
        attempts = sum(w.attempts for w in windows)
        secrets = self.secrets(session)
        outcome = WindowMerge(
            events_of=lambda w: window_events(session.events, w.span),
            thread=summarised_events(session.events),
            validator=self.validator,
            extractor=self.service.extractor,
            rendering=lambda events: self.service.rendering(events, secrets=secrets),
        )(windows)
        windows = outcome.windows
        gaps = [w for w in windows if w.record is None]
        metadata: dict[str, object] = {"windows": len(windows), "gaps": len(gaps)}
        if outcome.record is None:
            if outcome.problems:
                # The windows passed, their merge did not: a merge bug or a cross-window
                # value, and the record is not shown unchecked.
                logger.warning(
                    "merged record of session %s failed: %s", session.id, outcome.problems
                )
                reason, problems = "merge_failed", outcome.problems
            elif gaps:
                reason, problems = "validation_failed", [gap_problem(w) for w in gaps]
            else:
                reason = "no_session"
                problems = [
                    Problem(
                        ProblemKind.NO_SESSION,
                        (session.id,),
                        f"session {session.id} has no events",
                    )
                ]
            return NoSummary(
                session_id=session.id,
                problems=problems,
                attempts=attempts,
                usage=usage,
                problems_first_attempt=problems,
                latency_s=latency,
                reason=reason,
                metadata=metadata,
            )
        merged = outcome.record
        return Summary(
            session_id=session.id,
            record=merged,
            attempts=attempts,
            usage=usage,
            problems_first_attempt=first_attempt_problems(windows),
            latency_s=latency,
            metadata=metadata,
            windows=len(windows),
            gaps=tuple(WindowGap(w.span.start_id, w.span.end_id, w.problems) for w in gaps),
            unsummarised=(
                None
                if unsummarised is None
                else WindowGap(unsummarised.start_id, unsummarised.end_id, (NO_VALUES,))
            ),
        )
