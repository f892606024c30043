"""Per-summary measurements: counters in `agents.metrics.REGISTRY` and a `SummaryRun` record.

The service hands each `SummaryRun` to an optional sink (`async def add(run)`); storage's
`SummaryRunStore` persists them so `support-bot stats` can print the first-attempt pass
rate, the fallback rate and the cost per summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from agents.metrics import REGISTRY
from agents.summary.problems import Problem
from agents.summary.results import Attempt, Summary, SummaryResult

SUMMARIES_TOTAL = "support_bot_summaries_total"
SUMMARY_PROBLEMS_TOTAL = "support_bot_summary_problems_total"
SUMMARY_ATTEMPTS_TOTAL = "support_bot_summary_attempts_total"
SUMMARY_TOKENS_TOTAL = "support_bot_summary_tokens_total"
SUMMARY_COST_TOTAL = "support_bot_summary_cost_usd_total"
SUMMARY_REPAIRS_TOTAL = "support_bot_summary_repairs_total"

FIRST_ATTEMPT_PASS_RATIO = "support_bot_summary_first_attempt_pass_ratio"
FALLBACK_RATIO = "support_bot_summary_fallback_ratio"

REGISTRY.describe(FIRST_ATTEMPT_PASS_RATIO, "gauge", "Share of summaries valid at the first try")
REGISTRY.describe(FALLBACK_RATIO, "gauge", "Share of summaries that ended with no summary")
REGISTRY.describe(SUMMARY_PROBLEMS_TOTAL, "counter", "Summary validation problems, by kind")
REGISTRY.describe(SUMMARY_ATTEMPTS_TOTAL, "counter", "Summary model attempts, by result")
REGISTRY.describe(SUMMARY_TOKENS_TOTAL, "counter", "Summary model tokens, by kind")
REGISTRY.describe(SUMMARY_COST_TOTAL, "counter", "Summary model cost in USD")
REGISTRY.describe(
    SUMMARY_REPAIRS_TOTAL, "counter", "Summary draft items the small-model aids changed, by repair"
)

# Outcomes of `support_bot_summaries_total`.
PASSED_FIRST = "passed_first_attempt"
PASSED_RETRY = "passed_after_retry"
FALLBACK = "no_summary"
NO_SESSION = "no_session"


@dataclass(frozen=True)
class SummaryRun:
    """One summary attempt cycle as persisted: outcome, problems, tokens, cost, latency."""

    session_id: str
    first_attempt_pass: bool
    fallback: bool
    attempts: int
    problems: list[Problem] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency_s: float = 0.0
    model: str = ""
    outcome: str = ""
    no_high_value_entities: bool = False


class SummaryRunSink(Protocol):
    """Where `SummaryRun`s go (storage's `SummaryRunStore` implements it)."""

    async def add(self, run: SummaryRun) -> object:
        """Record `run`; whatever the sink answers (a row id, say) is ignored."""
        ...


def count_attempt(problems: list[Problem]) -> None:
    """Count one validated model attempt and each of its problems, by `Problem.kind`."""
    REGISTRY.inc(SUMMARY_ATTEMPTS_TOTAL, result="pass" if not problems else "fail")
    for problem in problems:
        REGISTRY.inc(SUMMARY_PROBLEMS_TOTAL, kind=problem.kind.value)


# The repairs of `support_bot_summary_repairs_total`, by the `Attempt` field counting each.
REPAIRS = {
    "example_copy": "copied_items",
    "recited": "recited_items",
    "unsupported": "unsupported_items",
    "answered": "answered_items",
    "completed": "completed_items",
    "quoted": "quoted_items",
    "grounded": "grounded_items",
    "withheld": "withheld_items",
}


def count_repairs(attempt: Attempt) -> None:
    """Count what the aids changed in one attempt's draft, by repair."""
    for repair, name in REPAIRS.items():
        changed = getattr(attempt, name)
        if changed:
            REGISTRY.inc(SUMMARY_REPAIRS_TOTAL, changed, repair=repair)


def count_run(run: SummaryRun) -> None:
    """Count one finished summary by outcome, with its tokens and cost."""
    REGISTRY.inc(SUMMARIES_TOTAL, outcome=run.outcome)
    REGISTRY.inc(SUMMARY_TOKENS_TOTAL, run.prompt_tokens, kind="prompt")
    REGISTRY.inc(SUMMARY_TOKENS_TOTAL, run.completion_tokens, kind="completion")
    REGISTRY.inc(SUMMARY_COST_TOTAL, run.cost)
    total = REGISTRY.get(SUMMARIES_TOTAL)
    REGISTRY.set(
        FIRST_ATTEMPT_PASS_RATIO, REGISTRY.get(SUMMARIES_TOTAL, outcome=PASSED_FIRST) / total
    )
    REGISTRY.set(FALLBACK_RATIO, REGISTRY.get(SUMMARIES_TOTAL, outcome=FALLBACK) / total)


# What a consumer received, per surface: `support_bot_summary_deliveries_total`.
DELIVERIES_TOTAL = "support_bot_summary_deliveries_total"
DELIVERED_FALLBACK_RATIO = "support_bot_summary_delivered_fallback_ratio"
DELIVERED_PARTIAL_RATIO = "support_bot_summary_delivered_partial_ratio"
REGISTRY.describe(DELIVERIES_TOTAL, "counter", "Summaries consumers received, by surface, outcome")
REGISTRY.describe(
    DELIVERED_FALLBACK_RATIO, "gauge", "Share of a surface's summaries that were no summary"
)
REGISTRY.describe(
    DELIVERED_PARTIAL_RATIO, "gauge", "Share of a surface's summaries that had gap windows"
)
SURFACES = ("digest", "summary", "handoff")
VALIDATED = "validated"
PARTIAL = "partial"
NONE = "none"
OUTCOMES = (VALIDATED, PARTIAL, NONE)


@dataclass(frozen=True)
class SummaryDelivery:
    """One summary a consumer received: where (`surface`), and whether it was whole
    (`validated`), had gap windows (`partial`) or was no summary at all (`none`)."""

    session_id: str
    surface: str
    outcome: str
    windows: int = 0
    gaps: int = 0


class DeliverySink(Protocol):
    """Where `SummaryDelivery`s go (storage's `SummaryDeliveryStore` implements it)."""

    async def add(self, delivery: SummaryDelivery) -> object:
        """Record `delivery`; whatever the sink answers is ignored."""
        ...


def delivery_of(result: SummaryResult, surface: str) -> SummaryDelivery:
    """What `surface`'s consumer receives of `result`: a `NoSummary` is `none` (a merged
    record that failed included), a `Summary` with gap windows `partial`."""
    if surface not in SURFACES:
        raise ValueError(f"unknown summary surface {surface!r}; known: {', '.join(SURFACES)}")
    if not isinstance(result, Summary):
        return SummaryDelivery(result.session_id, surface, NONE)
    outcome = PARTIAL if result.gaps else VALIDATED
    return SummaryDelivery(result.session_id, surface, outcome, result.windows, len(result.gaps))


async def count_delivery(
    result: SummaryResult, surface: str, sink: DeliverySink | None = None
) -> SummaryDelivery:
    """Count what `surface`'s consumer received of `result` in `/metrics` and, with a
    `sink`, in storage (`support-bot stats`)."""
    delivery = delivery_of(result, surface)
    REGISTRY.inc(DELIVERIES_TOTAL, surface=surface, outcome=delivery.outcome)
    total = sum(REGISTRY.get(DELIVERIES_TOTAL, surface=surface, outcome=o) for o in OUTCOMES)
    for ratio, outcome in ((DELIVERED_FALLBACK_RATIO, NONE), (DELIVERED_PARTIAL_RATIO, PARTIAL)):
        share = REGISTRY.get(DELIVERIES_TOTAL, surface=surface, outcome=outcome) / total
        REGISTRY.set(ratio, share, surface=surface)
    if sink is not None:
        await sink.add(delivery)
    return delivery
