"""Evaluating summaries on transcripts.jsonl (used by `support-bot eval summaries`).

Each conversation becomes a real session (user -> "user", agent -> `support_agent`, tool
-> a function_call event and a function_response event), is summarised by a
`SummaryService`, and is scored: first-attempt pass, pass after the retry, fallback,
recall of the expected high-value entities by passing records, citation validity, mean
sources per item, relevance failures caught, seconds and cost per summary.
Conversations with no high-value entity to recall are counted separately, so they
cannot inflate the recall figure. A `ShadowValidator` scores each first answer with a
second validator (the seed's) alongside, deciding nothing.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from agents.sessions.service import InMemorySessionService, SessionService
from agents.sessions.session import Session
from agents.summary.entities import ID_TYPES, Entity, mentions
from agents.summary.problems import Problem, ProblemKind
from agents.summary.results import Summary, SummaryResult
from agents.summary.service import SummaryService
from bot.evals.dataset import LabelledConversation
from bot.evals.shadow import ShadowValidator

HIGH_VALUE_TYPES = frozenset({*ID_TYPES, "amount", "email", "date", "flight_number"})
EVAL_APP = "summary_eval"
Half = Literal["look", "measure"]
HALVES: tuple[Half, ...] = ("look", "measure")
SPLIT_SEED = "summaries-split-1"
"""The split's seed: fixed once, so a thread stays in its half from run to run."""


def split_half(conversation_id: str) -> Half:
    """The half a conversation belongs to, from a seeded hash of its id: "look" (its
    problems are read while developing the summary agent) or "measure" (only measured)."""
    digest = hashlib.sha256(f"{SPLIT_SEED}:{conversation_id}".encode()).digest()
    return HALVES[digest[0] % 2]


def select_every_nth(
    conversations: Sequence[LabelledConversation], count: int
) -> list[LabelledConversation]:
    """The fixed selection rule: every (len // count)-th conversation in file order from the
    first, so 40 of 200 are indices 0, 5, ..., 195 (all sources, in their file proportions)."""
    if count <= 0 or count >= len(conversations):
        return list(conversations)
    step = len(conversations) // count
    return [conversations[i * step] for i in range(count)]


async def conversation_session(
    conversation: LabelledConversation, session_service: SessionService, *, app_name: str = EVAL_APP
) -> Session:
    """Append a conversation's events to a new session (ids assigned by the service)."""
    session = await session_service.create_session(
        app_name=app_name, user_id="eval", session_id=conversation.id
    )
    for event in conversation.events:
        await session_service.append_event(session, event)
    return session


@dataclass(frozen=True)
class ConversationScore:
    """One conversation's scores."""

    conversation_id: str
    passed_first: bool
    passed: bool
    attempts: int
    expected_high_value: int
    recalled_high_value: int
    items: int
    citations: int
    valid_citations: int
    relevance_failures: int
    copied_items: int
    recited_items: int
    unsupported_items: int
    answered_items: int
    completed_items: int
    quoted_items: int
    grounded_items: int
    withheld_items: int
    cut_off: int
    looped: int
    latency_s: float
    cost: float
    problems: tuple[str, ...] = ()
    # The seed's validator on the same first answer (None when it was not run).
    shadow_passed_first: bool | None = None


def outcome_line(outcome: ConversationScore, *, problems: bool = False) -> str:
    """One conversation's result as a line, for watching a long run; with `problems`,
    its first attempt's problems follow, indented (at most 12)."""
    verdict = (
        "pass-first" if outcome.passed_first else "pass-retry" if outcome.passed else "fallback"
    )
    seed = (
        ""
        if outcome.shadow_passed_first is None
        else f" seed={'pass' if outcome.shadow_passed_first else 'fail'}"
    )
    return (
        f"{outcome.conversation_id}: {verdict} attempts={outcome.attempts}"
        f" recall={outcome.recalled_high_value}/{outcome.expected_high_value}"
        f" relevance_failures={outcome.relevance_failures} completed={outcome.completed_items}"
        f" quoted={outcome.quoted_items} grounded={outcome.grounded_items}"
        f" example_copies={outcome.copied_items} recited={outcome.recited_items}"
        f" unsupported={outcome.unsupported_items} answered={outcome.answered_items}"
        f" {outcome.latency_s:.1f}s{seed}"
    ) + "".join(f"\n    {p}" for p in (outcome.problems[:12] if problems else ()))


@dataclass
class EvalReport:
    """Aggregate figures over a set of `ConversationScore`s."""

    label: str
    outcomes: list[ConversationScore] = field(default_factory=list)

    def _rate(self, flags: Iterable[bool]) -> float:
        values = list(flags)
        return sum(values) / len(values) if values else 0.0

    @property
    def first_attempt_pass_rate(self) -> float:
        return self._rate(o.passed_first for o in self.outcomes)

    @property
    def pass_rate(self) -> float:
        return self._rate(o.passed for o in self.outcomes)

    @property
    def fallback_rate(self) -> float:
        return 1.0 - self.pass_rate if self.outcomes else 0.0

    @property
    def passed_with_entities(self) -> list[ConversationScore]:
        return [o for o in self.outcomes if o.passed and o.expected_high_value]

    @property
    def passed_without_entities(self) -> int:
        """Passing records of conversations with no high-value entity: nothing to recall."""
        return sum(1 for o in self.outcomes if o.passed and not o.expected_high_value)

    @property
    def recalled_all(self) -> int:
        return sum(
            1 for o in self.passed_with_entities if o.recalled_high_value == o.expected_high_value
        )

    @property
    def entity_recall(self) -> float | None:
        """Recall of expected high-value entities by passing records that had some."""
        expected = sum(o.expected_high_value for o in self.passed_with_entities)
        recalled = sum(o.recalled_high_value for o in self.passed_with_entities)
        return recalled / expected if expected else None

    @property
    def citation_validity(self) -> float:
        citations = sum(o.citations for o in self.outcomes)
        return sum(o.valid_citations for o in self.outcomes) / citations if citations else 0.0

    @property
    def mean_sources_per_item(self) -> float:
        items = sum(o.items for o in self.outcomes)
        return sum(o.citations for o in self.outcomes) / items if items else 0.0

    @property
    def seconds_per_summary(self) -> float:
        return statistics.median(o.latency_s for o in self.outcomes) if self.outcomes else 0.0

    @property
    def cost_per_summary(self) -> float:
        return sum(o.cost for o in self.outcomes) / len(self.outcomes) if self.outcomes else 0.0

    def lines(self) -> list[str]:
        """The report as printable lines."""
        recall = self.entity_recall
        n = len(self.outcomes)
        return [
            f"[{self.label}] summaries: {n}",
            f"  first-attempt pass rate: {self.first_attempt_pass_rate:.1%}",
            f"  pass rate after one retry: {self.pass_rate:.1%}",
            f"  fallback (no summary) rate: {self.fallback_rate:.1%}",
            "  high-value entity recall (passing records): "
            + ("n/a" if recall is None else f"{recall:.3f}"),
            f"  passing records that recalled all: {self.recalled_all}"
            f" of {len(self.passed_with_entities)}",
            f"  passing records with no high-value entities to recall: "
            f"{self.passed_without_entities}",
            f"  citation validity (cited ids that exist): {self.citation_validity:.3f}",
            f"  mean sources per item: {self.mean_sources_per_item:.2f}",
            f"  relevance failures caught: {sum(o.relevance_failures for o in self.outcomes)}",
            "  items written by the completion pass: "
            f"{sum(o.completed_items for o in self.outcomes)};"
            " values quoted from their events by code: "
            f"{sum(o.quoted_items for o in self.outcomes)}",
            "  items whose citations the system grounded: "
            f"{sum(o.grounded_items for o in self.outcomes)};"
            " items dropped for restating a masked secret: "
            f"{sum(o.withheld_items for o in self.outcomes)};"
            " items dropped as copies of the worked example: "
            f"{sum(o.copied_items for o in self.outcomes)}",
            "  items without values re-cited to the events that support them: "
            f"{sum(o.recited_items for o in self.outcomes)};"
            " dropped as supported by no event: "
            f"{sum(o.unsupported_items for o in self.outcomes)};"
            " answered open questions moved to facts (or dropped): "
            f"{sum(o.answered_items for o in self.outcomes)}",
            f"  cut-off answers: {sum(o.cut_off for o in self.outcomes)};"
            f" looping answers: {sum(o.looped for o in self.outcomes)}",
            f"  seconds per summary (median): {self.seconds_per_summary:.2f}",
            f"  cost per summary: ${self.cost_per_summary:.6f}",
            *self.source_lines(),
            *self.shadow_lines(),
        ]

    def source_lines(self) -> list[str]:
        """First-attempt pass, pass and median seconds per source (the id's prefix)."""
        by_source: dict[str, list[ConversationScore]] = {}
        for o in self.outcomes:
            by_source.setdefault(o.conversation_id.split("-", 1)[0], []).append(o)
        if len(by_source) < 2:
            return []
        return [
            f"  {source}: {len(group)} summaries, first-attempt pass"
            f" {self._rate(o.passed_first for o in group):.1%},"
            f" pass {self._rate(o.passed for o in group):.1%},"
            f" median {statistics.median(o.latency_s for o in group):.1f} s"
            for source, group in sorted(by_source.items())
        ]

    def shadow_lines(self) -> list[str]:
        """The seed's validator on the same first answers, side by side."""
        shadowed = [o for o in self.outcomes if o.shadow_passed_first is not None]
        if not shadowed:
            return []
        seed_pass = [o for o in shadowed if o.shadow_passed_first]
        caught = [o for o in seed_pass if not o.passed_first]
        empty = sum(1 for o in seed_pass if not o.expected_high_value)
        return [
            f"  seed validator on the same first answers: pass {len(seed_pass) / len(shadowed):.1%}"
            f" ({len(seed_pass)} of {len(shadowed)}; {empty} of them had no high-value entity)",
            f"  of those, rejected by this validator: {len(caught)}",
        ]


def expected_high_value(conversation: LabelledConversation) -> list[Entity]:
    """The conversation's labelled high-value, non-sensitive entities, one per value."""
    seen: dict[tuple[str, str], Entity] = {}
    for e in conversation.expected:
        if e.type in HIGH_VALUE_TYPES and not e.sensitive:
            seen.setdefault(
                (e.type, e.value.casefold()), Entity(type=e.type, value=e.value, event_ids=())
            )
    return list(seen.values())


def score(
    conversation: LabelledConversation,
    result: SummaryResult,
    shadow_problems: list[Problem] | None = None,
) -> ConversationScore:
    """Score one summary result against the conversation's labels; `shadow_problems` is
    what a shadow validator found in its first answer."""
    expected = expected_high_value(conversation)
    recalled = 0
    if isinstance(result, Summary):
        text = result.record.all_text()
        recalled = sum(1 for e in expected if mentions(text, e))
    log = result.attempt_log
    problems = result.problems_first_attempt
    return ConversationScore(
        conversation_id=conversation.id,
        passed_first=bool(log) and log[0].passed,
        passed=isinstance(result, Summary),
        attempts=result.attempts,
        expected_high_value=len(expected),
        recalled_high_value=recalled,
        items=sum(a.items for a in log),
        citations=sum(a.citations for a in log),
        valid_citations=sum(a.valid_citations for a in log),
        relevance_failures=sum(a.relevance_failures for a in log),
        completed_items=sum(a.completed_items for a in log),
        quoted_items=sum(a.quoted_items for a in log),
        copied_items=sum(a.copied_items for a in log),
        recited_items=sum(a.recited_items for a in log),
        unsupported_items=sum(a.unsupported_items for a in log),
        answered_items=sum(a.answered_items for a in log),
        grounded_items=sum(a.grounded_items for a in log),
        withheld_items=sum(a.withheld_items for a in log),
        cut_off=sum(a.cut_off for a in log),
        looped=sum(a.looped for a in log),
        latency_s=result.latency_s,
        cost=result.usage.cost,
        problems=tuple(str(p) for p in problems),
        shadow_passed_first=None if shadow_problems is None else not shadow_problems,
    )


async def evaluate(
    conversations: Sequence[LabelledConversation],
    service: SummaryService,
    *,
    label: str = "strict",
    progress: Callable[[int, int], None] | None = None,
    on_outcome: Callable[[ConversationScore], None] | None = None,
) -> EvalReport:
    """Summarise and score every conversation; `progress(done, total)` and
    `on_outcome(outcome)` after each, so a long run shows its results as it goes. A
    service whose validator is a `ShadowValidator` gets the shadow's verdicts scored."""
    report = EvalReport(label=label)
    sessions = InMemorySessionService()
    shadow = service.validator if isinstance(service.validator, ShadowValidator) else None
    for done, conversation in enumerate(conversations, start=1):
        session = await conversation_session(conversation, sessions)
        result = await service.summarize(session)
        shadowed = _shadow_verdict(shadow, result) if shadow is not None else None
        report.outcomes.append(score(conversation, result, shadowed))
        if on_outcome is not None:
            on_outcome(report.outcomes[-1])
        await sessions.delete_session(app_name=EVAL_APP, user_id="eval", session_id=session.id)
        if progress is not None:
            progress(done, len(conversations))
    return report


def _shadow_verdict(shadow: ShadowValidator, result: SummaryResult) -> list[Problem] | None:
    """The shadow's problems with the first answer; a first attempt whose model call
    failed reached no validator, and fails under both."""
    taken = shadow.take()
    if not result.attempt_log:
        return None
    first = result.attempt_log[0]
    if any(p.kind is ProblemKind.MODEL_ERROR for p in first.problems):
        return list(first.problems)
    return taken
