"""Summary windows: the thread cut into small ranges of events, each summarised once.

A window is a run of consecutive invocations: it closes after `interval` of them, the
cadence compaction uses (`COMPACTION_INTERVAL`), never between a function call and its
response. With a `holds_values` test (`agents.summary.demands`), a window also waits
until it holds something the validator asks for (a value or an agent promise): a run
of invocations without one ("Which hotel?", "Thanks!") stays open and is summarised
together with the invocations that follow, once, citing only its own range. A window
with no value still closes at `max_invocations` (`WINDOW_BOUND` times the interval), so
no window's transcript grows without bound. The cut is a function of the events alone
(each window's test reads only its own events), so a live hook, the digest path and an
evaluation replay cut a thread the same way. A stored window is kept while the
events in its range are the ones it was built from (its `fingerprint`); when they
change (a `forget` deleted some) it is rebuilt. Events no stored window covers are cut
again from where the uncovered run starts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agents.events import Event

WindowStatus = Literal["passed", "gap"]
# A window with no value closes after this many times `interval` invocations.
WINDOW_BOUND = 2
HoldsValues = Callable[[Sequence[Event]], bool]


@dataclass(frozen=True)
class WindowSpan:
    """A range of a session's events (`start_seq`..`end_seq`, inclusive) to summarise.

    `closed` is False for the thread's tail, which later events may still extend.
    `holds_values` is False for a planned span holding nothing the validator asks for
    (not stored: a stored window is judged by its record).
    """

    start_seq: int
    end_seq: int
    start_id: str
    end_id: str
    fingerprint: str
    closed: bool = True
    holds_values: bool = field(default=True, compare=False)

    def label(self) -> str:
        """`e12–e20`, as a digest names a range."""
        return self.start_id if self.start_id == self.end_id else f"{self.start_id}–{self.end_id}"


@dataclass(frozen=True)
class StoredWindow:
    """One window's outcome as stored: a validated record (JSON) or a named gap.

    A gap keeps its last attempt's problems and never the model's text. A passed window
    keeps its first attempt's problems, the ones a retry mended (none when it passed
    first time), so a digest can say what its windows needed.
    """

    span: WindowSpan
    status: WindowStatus
    record: dict[str, Any] | None
    problems: tuple[str, ...] = ()
    attempts: int = 0
    first_attempt_pass: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency_s: float = 0.0
    closed_by: str = "digest"


class WindowStore(Protocol):
    """Where window records live (`storage.summaries.windows.WindowStore` in the bot)."""

    async def windows(self, session_id: str) -> list[StoredWindow]:
        """Every stored window of `session_id`, in event order."""
        ...

    async def save(self, session_id: str, window: StoredWindow) -> None:
        """Store `window`, replacing any stored window of the session it overlaps."""
        ...


@dataclass
class InMemoryWindowStore:
    """A `WindowStore` in a dict, for evaluations and unit tests."""

    rows: dict[str, list[StoredWindow]] = field(default_factory=dict)

    async def windows(self, session_id: str) -> list[StoredWindow]:
        return sorted(self.rows.get(session_id, []), key=lambda w: w.span.start_seq)

    async def save(self, session_id: str, window: StoredWindow) -> None:
        kept = [w for w in self.rows.get(session_id, []) if not _overlaps(w.span, window.span)]
        self.rows[session_id] = [*kept, window]


def _overlaps(a: WindowSpan, b: WindowSpan) -> bool:
    return a.start_seq <= b.end_seq and b.start_seq <= a.end_seq


def summarised_events(events: Sequence[Event]) -> list[Event]:
    """The events windows cover, in order: everything but compaction summaries (a
    model's paraphrase of events the windows see themselves)."""
    return sorted((e for e in events if not e.is_compaction and e.seq > 0), key=lambda e: e.seq)


def fingerprint(events: Sequence[Event]) -> str:
    """What a window was built from: its event ids (events are immutable, so a changed
    range is one where events were deleted or added)."""
    return hashlib.sha256(",".join(e.id for e in events).encode()).hexdigest()[:32]


def span_of(
    events: Sequence[Event], *, closed: bool = True, holds_values: bool = True
) -> WindowSpan:
    """The span of a non-empty, ordered run of events."""
    return WindowSpan(
        start_seq=events[0].seq,
        end_seq=events[-1].seq,
        start_id=events[0].id,
        end_id=events[-1].id,
        fingerprint=fingerprint(events),
        closed=closed,
        holds_values=holds_values,
    )


def invocations(events: Sequence[Event]) -> list[list[Event]]:
    """Consecutive events grouped by invocation. Events without an invocation id (an
    imported transcript) start a new group at each user message."""
    groups: list[list[Event]] = []
    for event in events:
        if groups:
            last = groups[-1][-1]
            same = (
                event.invocation_id == last.invocation_id
                if event.invocation_id or last.invocation_id
                else event.author != "user"
            )
            if same:
                groups[-1].append(event)
                continue
        groups.append([event])
    return groups


def _resolved(events: Sequence[Event]) -> bool:
    calls = {c.id for e in events for c in e.function_calls}
    return calls <= {r.id for e in events for r in e.function_responses}


def _cut(
    run: list[Event],
    interval: int,
    *,
    open_tail: bool,
    holds_values: HoldsValues | None = None,
    max_invocations: int | None = None,
    crowded: HoldsValues | None = None,
) -> list[WindowSpan]:
    """Cut one uncovered run into windows of at least `interval` invocations, each closing
    once it holds a value (with `holds_values`) or reaches `max_invocations`; the
    remainder is a window of its own, open when the run is the thread's tail. A window
    `crowded` with values closes at the end of any invocation, before `interval`, and
    inside one invocation that alone holds many (an agent listing every flight it found):
    after the event that crowds it, where no call waits for its response. A window that
    fails is a gap, and a smaller one costs fewer values."""
    spans: list[WindowSpan] = []
    current: list[Event] = []
    count = 0
    bound = max(interval, max_invocations or WINDOW_BOUND * interval)
    for group in invocations(run):
        if crowded is not None and crowded([*current, *group]):
            for event in group[:-1]:
                current.append(event)
                if _resolved(current) and crowded(current):
                    spans.append(span_of(current))
                    current, count = [], 0
            group = group[-1:]
        current += group
        count += 1
        if not _resolved(current):
            continue
        if count < interval and (crowded is None or not crowded(current)):
            continue
        valued = holds_values is None or holds_values(current)
        if valued or count >= bound:
            spans.append(span_of(current, holds_values=valued))
            current, count = [], 0
    if current:
        valued = holds_values is None or holds_values(current)
        spans.append(span_of(current, closed=not open_tail, holds_values=valued))
    return spans


@dataclass(frozen=True)
class WindowPlan:
    """The stored windows still valid, and the spans to summarise (in event order)."""

    kept: list[StoredWindow]
    todo: list[WindowSpan]


def plan_windows(
    events: Sequence[Event],
    stored: Sequence[StoredWindow],
    *,
    interval: int,
    completed_through: str | None = None,
    holds_values: HoldsValues | None = None,
    max_invocations: int | None = None,
    crowded: HoldsValues | None = None,
) -> WindowPlan:
    """Which windows of `events` are stored and valid, and which to summarise.

    `completed_through` is the invocation that just finished: later events belong to
    invocations still running and are left out. The tail (events after the last
    complete window) is in `todo` as an open span. Without `holds_values`, every window
    closes at `interval` invocations (the cut before windows waited for a value). With
    `crowded`, a window that holds many values closes sooner (`_cut`).
    """
    ordered = summarised_events(events)
    if completed_through is not None:
        ids = [e.invocation_id for e in ordered]
        if completed_through in ids:
            last = len(ids) - ids[::-1].index(completed_through)
            ordered = ordered[:last]
    by_seq = {e.seq: e for e in ordered}
    kept: list[StoredWindow] = []
    covered: set[int] = set()
    for window in stored:
        span = window.span
        inside = [by_seq[s] for s in sorted(by_seq) if span.start_seq <= s <= span.end_seq]
        if inside and fingerprint(inside) == span.fingerprint:
            kept.append(window)
            covered.update(e.seq for e in inside)
    runs: list[list[Event]] = []
    for event in ordered:
        if event.seq in covered:
            if runs and runs[-1]:
                runs.append([])
            continue
        if not runs:
            runs.append([])
        runs[-1].append(event)
    runs = [run for run in runs if run]
    tail_start = ordered[-1].seq if ordered else 0
    todo = [
        span
        for run in runs
        for span in _cut(
            run,
            max(1, interval),
            open_tail=run[-1].seq == tail_start,
            holds_values=holds_values,
            max_invocations=max_invocations,
            crowded=crowded,
        )
    ]
    return WindowPlan(kept=sorted(kept, key=lambda w: w.span.start_seq), todo=todo)
