"""What consumers received, counted per surface: a record with gaps is partial, a merged
record that failed is no summary, and each surface has its own ratios."""

from __future__ import annotations

import pytest

from agents.events import Usage
from agents.metrics import REGISTRY
from agents.summary.metrics import (
    DELIVERED_FALLBACK_RATIO,
    DELIVERED_PARTIAL_RATIO,
    DELIVERIES_TOTAL,
    SummaryDelivery,
    count_delivery,
)
from agents.summary.problems import Problem, ProblemKind
from agents.summary.record import HandoffRecord
from agents.summary.results import NoSummary, Summary, WindowGap


def summary(*gaps: WindowGap) -> Summary:
    return Summary(
        session_id="s1",
        record=HandoffRecord(goal="Refund A-1001"),
        attempts=3,
        usage=Usage(),
        problems_first_attempt=[],
        latency_s=0.0,
        windows=3,
        gaps=gaps,
    )


MERGE_FAILED = NoSummary(
    session_id="s1",
    problems=[Problem(ProblemKind.DROPPED_ENTITY, (), "merged record: dropped B-2040")],
    attempts=4,
    usage=Usage(),
    problems_first_attempt=[],
    latency_s=0.0,
    reason="merge_failed",
)


class Sink:
    def __init__(self) -> None:
        self.rows: list[SummaryDelivery] = []

    async def add(self, delivery: SummaryDelivery) -> None:
        self.rows.append(delivery)


async def test_deliveries_count_what_each_surface_received() -> None:
    sink = Sink()
    gap = WindowGap("e5", "e8", ("fact 1 cites e5, which does not mention July 7th",))
    await count_delivery(summary(), "digest", sink)
    await count_delivery(summary(gap), "digest", sink)
    await count_delivery(MERGE_FAILED, "summary", sink)
    await count_delivery(summary(gap), "handoff", sink)
    assert [(d.surface, d.outcome, d.windows, d.gaps) for d in sink.rows] == [
        ("digest", "validated", 3, 0),
        ("digest", "partial", 3, 1),
        ("summary", "none", 0, 0),
        ("handoff", "partial", 3, 1),
    ]
    assert REGISTRY.get(DELIVERIES_TOTAL, surface="summary", outcome="none") == 1
    assert REGISTRY.get(DELIVERED_PARTIAL_RATIO, surface="digest") == 0.5
    assert REGISTRY.get(DELIVERED_FALLBACK_RATIO, surface="digest") == 0.0
    assert REGISTRY.get(DELIVERED_FALLBACK_RATIO, surface="summary") == 1.0
    assert REGISTRY.get(DELIVERED_PARTIAL_RATIO, surface="handoff") == 1.0


async def test_an_unknown_surface_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown summary surface 'lead'"):
        await count_delivery(summary(), "lead")
