"""Evaluating `SUMMARY_MODE=incremental` beside `whole` on the same conversations.

Each conversation is replayed as the bot would live it: its events are appended one
invocation at a time (a user message and what follows it), and after each the window
hook runs (`IncrementalSummarizer` as an after-invocation hook), writing the record of
every window that closed (a window closes once it holds a value). When the conversation
is over, the digest's summary runs: it summarises the tail since the last window (unless
that holds no value and an earlier window has a record: then the line names it as
`unsummarised`) and merges. Reported per mode: window
first-attempt pass, threads with no gap / with gaps / with no record, high-value recall
of the merged record against the dataset's labels, and the seconds spent summarising
per thread, in total and at idle (when the digest is made).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agents.metrics import REGISTRY
from agents.sessions.service import InMemorySessionService
from agents.summary.entities import mentions
from agents.summary.incremental import IncrementalSummarizer
from agents.summary.metrics import REPAIRS, SUMMARY_REPAIRS_TOTAL
from agents.summary.problems import ProblemKind
from agents.summary.results import Summary
from agents.summary.service import SummaryService
from agents.summary.windows import InMemoryWindowStore, invocations
from bot.evals.dataset import LabelledConversation
from bot.evals.summaries import EVAL_APP, expected_high_value

USER = "eval"


@dataclass(frozen=True)
class ThreadScore:
    """One conversation under one mode."""

    conversation_id: str
    windows: int
    windows_first_pass: int
    gaps: int
    has_record: bool
    expected_high_value: int
    recalled_high_value: int
    total_s: float
    idle_s: float
    problems: tuple[str, ...] = ()
    generated_tokens: int = 0
    idle_generated_tokens: int = 0
    prompt_tokens: int = 0
    # The open tail a digest left unsummarised (it held no value), e.g. "e30–e34".
    unsummarised: str = ""
    # Draft items the aids changed, by repair (`support_bot_summary_repairs_total`).
    repairs: dict[str, int] = field(default_factory=dict)


def thread_line(mode: str, score: ThreadScore, *, problems: bool = False) -> str:
    """One conversation's result as a line, for watching a long run; with `problems`,
    what its gaps (or its failed summary) found follows, indented (at most 12)."""
    verdict = "no record" if not score.has_record else "gaps" if score.gaps else "no gap"
    return (
        f"[{mode}] {score.conversation_id}: {verdict} windows={score.windows}"
        f" first-pass={score.windows_first_pass}/{score.windows}"
        f" recall={score.recalled_high_value}/{score.expected_high_value}"
        f" total={score.total_s:.1f}s idle={score.idle_s:.1f}s"
        f" generated={score.generated_tokens}tok idle={score.idle_generated_tokens}tok"
        + (f" unsummarised={score.unsummarised}" if score.unsummarised else "")
        + "".join(f" {repair}={n}" for repair, n in score.repairs.items() if n)
    ) + "".join(f"\n    {p}" for p in (score.problems[:12] if problems else ()))


@dataclass
class ModeReport:
    """Aggregate figures of one mode."""

    mode: str
    scores: list[ThreadScore] = field(default_factory=list)

    def _share(self, count: int) -> float:
        return count / len(self.scores) if self.scores else 0.0

    @property
    def window_first_pass(self) -> float:
        windows = sum(s.windows for s in self.scores)
        return sum(s.windows_first_pass for s in self.scores) / windows if windows else 0.0

    @property
    def no_gap(self) -> int:
        return sum(1 for s in self.scores if s.has_record and not s.gaps)

    @property
    def with_gaps(self) -> int:
        return sum(1 for s in self.scores if s.has_record and s.gaps)

    @property
    def no_record(self) -> int:
        return sum(1 for s in self.scores if not s.has_record)

    @property
    def recall(self) -> float | None:
        """Recall of labelled high-value values by the threads' records (threads with none
        count as recalling nothing, so a missing record cannot flatter the figure)."""
        expected = sum(s.expected_high_value for s in self.scores)
        recalled = sum(s.recalled_high_value for s in self.scores)
        return recalled / expected if expected else None

    def median(self, values: Sequence[float]) -> float:
        return statistics.median(values) if values else 0.0

    def column(self) -> dict[str, str]:
        """The mode's figures by row name."""
        n = len(self.scores)
        recall = self.recall
        return {
            "threads": str(n),
            "windows (summaries) per thread": f"{sum(s.windows for s in self.scores) / n:.1f}"
            if n
            else "0",
            "window first-attempt pass": f"{self.window_first_pass:.1%}",
            "threads with no gap": f"{self.no_gap} ({self._share(self.no_gap):.1%})",
            "threads with gaps": f"{self.with_gaps} ({self._share(self.with_gaps):.1%})",
            "threads with no record": f"{self.no_record} ({self._share(self.no_record):.1%})",
            "high-value recall (all labels)": "n/a" if recall is None else f"{recall:.3f}",
            "model seconds per thread, total (median)": (
                f"{self.median([s.total_s for s in self.scores]):.1f}"
            ),
            "model seconds per thread, total (mean)": (
                f"{statistics.fmean([s.total_s for s in self.scores]):.1f}" if n else "0.0"
            ),
            "model seconds at idle (median)": f"{self.median([s.idle_s for s in self.scores]):.1f}",
            # Tokens do not depend on the machine's load, as seconds on a shared one do.
            "tokens generated per thread (median)": (
                f"{self.median([s.generated_tokens for s in self.scores]):.0f}"
            ),
            "tokens generated at idle (median)": (
                f"{self.median([s.idle_generated_tokens for s in self.scores]):.0f}"
            ),
            "prompt tokens per thread (median)": (
                f"{self.median([s.prompt_tokens for s in self.scores]):.0f}"
            ),
            "items re-cited / dropped unsupported / answered questions moved": (
                " / ".join(
                    str(sum(s.repairs.get(r, 0) for s in self.scores))
                    for r in ("recited", "unsupported", "answered")
                )
            ),
        }


def side_by_side(reports: Sequence[ModeReport], *, group: str = "") -> list[str]:
    """The modes' figures as a table, one column per mode."""
    columns = [r.column() for r in reports]
    rows = list(columns[0]) if columns else []
    width = max((len(r) for r in rows), default=10) + 2
    title = f"summary modes{f' ({group})' if group else ''}"
    lines = [title.ljust(width) + "".join(r.mode.rjust(18) for r in reports)]
    lines += [row.ljust(width) + "".join(c[row].rjust(18) for c in columns) for row in rows]
    return lines


def repair_counts() -> dict[str, int]:
    """The aids' repairs counted so far in this process, by repair."""
    return {r: int(REGISTRY.get(SUMMARY_REPAIRS_TOTAL, repair=r)) for r in REPAIRS}


def repairs_since(before: dict[str, int]) -> dict[str, int]:
    """The repairs counted since `before` (`repair_counts()`): one thread's, as the
    evaluation summarises one thread at a time."""
    return {r: n - before.get(r, 0) for r, n in repair_counts().items()}


def _recalled(conversation: LabelledConversation, result: object) -> tuple[int, int, bool]:
    expected = expected_high_value(conversation)
    if not isinstance(result, Summary):
        return len(expected), 0, False
    text = result.record.all_text()
    return len(expected), sum(1 for e in expected if mentions(text, e)), True


async def replay_incremental(
    conversation: LabelledConversation, service: SummaryService, *, interval: int
) -> ThreadScore:
    """Replay one conversation through the windows as live, then make its digest."""
    sessions = InMemorySessionService()
    store = InMemoryWindowStore()
    summarizer = IncrementalSummarizer(service, store, interval=interval, session_service=sessions)
    session = await sessions.create_session(
        app_name=EVAL_APP, user_id=USER, session_id=conversation.id
    )
    live = 0.0
    counted = repair_counts()
    for number, group in enumerate(invocations(list(conversation.events)), start=1):
        invocation = f"inv-{number}"
        for event in group:
            await sessions.append_event(
                session, event.model_copy(update={"invocation_id": invocation})
            )
        started = time.perf_counter()
        await summarizer(session, invocation)
        live += time.perf_counter() - started
    whole = await sessions.get_session(app_name=EVAL_APP, user_id=USER, session_id=session.id)
    assert whole is not None
    started = time.perf_counter()
    result = await summarizer.summarize(whole)
    idle = time.perf_counter() - started
    windows = await store.windows(session.id)
    expected, recalled, has_record = _recalled(conversation, result)
    at_idle = [w for w in windows if w.closed_by == "digest"]
    return ThreadScore(
        conversation_id=conversation.id,
        windows=len(windows),
        windows_first_pass=sum(1 for w in windows if w.first_attempt_pass),
        gaps=sum(1 for w in windows if w.record is None),
        has_record=has_record,
        expected_high_value=expected,
        recalled_high_value=recalled,
        total_s=live + idle,
        idle_s=idle,
        # A gap's problems, and what a passed window's retry mended.
        problems=tuple(
            f"{w.span.label()} ({'gap' if w.record is None else 'mended'}): {p}"
            for w in windows
            for p in w.problems
        )
        + tuple(
            str(p)
            for p in getattr(result, "problems", ())
            if getattr(p, "kind", None) is not ProblemKind.WINDOW_GAP
        ),
        generated_tokens=sum(w.completion_tokens for w in windows),
        idle_generated_tokens=sum(w.completion_tokens for w in at_idle),
        prompt_tokens=sum(w.prompt_tokens for w in windows),
        unsummarised=(
            result.unsummarised.label()
            if isinstance(result, Summary) and result.unsummarised is not None
            else ""
        ),
        repairs=repairs_since(counted),
    )


async def replay_whole(conversation: LabelledConversation, service: SummaryService) -> ThreadScore:
    """Today's pipeline: nothing while the thread runs, one summary of it at idle."""
    sessions = InMemorySessionService()
    session = await sessions.create_session(
        app_name=EVAL_APP, user_id=USER, session_id=conversation.id
    )
    for event in conversation.events:
        await sessions.append_event(session, event)
    counted = repair_counts()
    started = time.perf_counter()
    result = await service.summarize(session)
    idle = time.perf_counter() - started
    expected, recalled, has_record = _recalled(conversation, result)
    log = result.attempt_log
    return ThreadScore(
        conversation_id=conversation.id,
        windows=1,
        windows_first_pass=int(bool(log) and log[0].passed),
        gaps=0,
        has_record=has_record,
        expected_high_value=expected,
        recalled_high_value=recalled,
        total_s=idle,
        idle_s=idle,
        problems=tuple(str(p) for p in getattr(result, "problems", ())),
        generated_tokens=result.usage.completion_tokens,
        idle_generated_tokens=result.usage.completion_tokens,
        prompt_tokens=result.usage.prompt_tokens,
        repairs=repairs_since(counted),
    )


def mode_order(modes: Sequence[str], index: int) -> list[str]:
    """The order the modes run in on the `index`-th conversation: rotated by one each
    conversation, so each mode goes first on an equal share."""
    shift = index % len(modes) if modes else 0
    return [*modes[shift:], *modes[:shift]]


async def compare_modes(
    conversations: Sequence[LabelledConversation],
    service: SummaryService,
    *,
    interval: int,
    modes: Sequence[str] = ("incremental", "whole"),
    on_score: Callable[[str, ThreadScore], None] | None = None,
) -> list[ModeReport]:
    """Every conversation under each mode, one conversation at a time, the modes taking
    turns at going first (`mode_order`): a local model server keeps the prompt it last
    processed, so the mode run second on a conversation reuses the first one's transcript
    and would look faster for it."""
    reports = {mode: ModeReport(mode) for mode in modes}
    for index, conversation in enumerate(conversations):
        for mode in mode_order(modes, index):
            if mode == "incremental":
                score = await replay_incremental(conversation, service, interval=interval)
            else:
                score = await replay_whole(conversation, service)
            reports[mode].scores.append(score)
            if on_score is not None:
                on_score(mode, score)
    return list(reports.values())


def by_source(reports: Sequence[ModeReport]) -> dict[str, list[ModeReport]]:
    """The same reports split by conversation source (the id's prefix)."""
    sources = sorted({s.conversation_id.split("-", 1)[0] for r in reports for s in r.scores})
    return {
        source: [
            ModeReport(
                r.mode, [s for s in r.scores if s.conversation_id.split("-", 1)[0] == source]
            )
            for r in reports
        ]
        for source in sources
    }
