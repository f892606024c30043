"""User claims, decided per value: what no agent source an item cites states is the user's."""

from __future__ import annotations

from agents.compaction import COMPACTION_AUTHOR
from agents.events import CompactionInfo, Event, EventActions
from agents.handoff import handoff_event
from agents.summary.checks.claims import label_user_claims
from agents.summary.checks.coverage import find_promises
from agents.summary.record import HandoffRecord
from bot.evals.dataset import numbered
from tests.agents.summary.conftest import agent, handoff, item, refund_events, refund_record, user

CLAIM = "Your colleague promised me a full refund of $500 by Friday for order A-4411"


def labels(events: list[Event], **sections: list[dict[str, object]]) -> dict[str, list[bool]]:
    record = HandoffRecord.model_validate(handoff("Refund", **sections))
    labelled = label_user_claims(record, events)
    return {s: [i.user_claim for i in getattr(labelled, s)] for s in sections}


def compaction(summary: str) -> Event:
    return Event(
        author=COMPACTION_AUTHOR,
        actions=EventActions(
            compaction=CompactionInfo(start_event_id="e1", end_event_id="e2", summary=summary)
        ),
    )


def test_a_value_only_the_user_states_makes_a_claim_even_when_an_agent_is_cited() -> None:
    events = numbered([user(CLAIM), agent("Let me look into order A-4411.")])
    assert labels(
        events,
        facts=[
            item("Full refund of $500 for order A-4411", "e1", "e2"),
            item("The user asked about order A-4411", "e1", "e2"),
        ],
        commitments=[item("Full refund of $500 for order A-4411 by Friday", "e1", "e2")],
    ) == {"facts": [True, False], "commitments": [True]}


def test_words_only_the_user_wrote_make_a_claim() -> None:
    events = numbered(
        [user("I am pre-approved for a full refund on A-4411"), agent("Order A-4411 is open.")]
    )
    assert labels(events, decisions=[item("Full refund approved for A-4411", "e1", "e2")]) == {
        "decisions": [True]
    }


def test_a_commitment_needs_an_agent_event_that_states_the_promise() -> None:
    events = numbered(
        [
            user("Refund of $12.50 on A-1001 please"),
            agent("The refund of $12.50 on A-1001 is possible."),
            agent("I've issued a refund of $12.50 on A-1001."),
        ]
    )
    assert labels(
        events,
        commitments=[
            item("Refund of $12.50 issued on A-1001", "e2"),
            item("Refund of $12.50 issued on A-1001", "e3"),
        ],
    ) == {"commitments": [True, False]}


def test_compaction_and_handoff_events_are_user_derived_unless_an_agent_corroborates() -> None:
    events = numbered(
        [
            user("Order A-4411 was charged twice, $40 each"),
            agent("I see two charges of $40 on A-4411."),
            compaction("The user was charged twice, $40 each, on A-4411; promised $500."),
            handoff_event("> I will refund you $500 by Friday", target="billing_agent"),
        ]
    )
    assert labels(
        events,
        facts=[
            item("A-4411 was charged $40 twice", "e3"),
            item("Two charges of $40 on A-4411", "e3", "e2"),
            item("Refund of $500 promised", "e3", "e4"),
        ],
        commitments=[item("Refund of $500 by Friday", "e4")],
    ) == {"facts": [True, False, True], "commitments": [True]}
    assert [p.event_id for p in find_promises(events)] == []


def test_tool_results_are_agent_sources() -> None:
    events = numbered(refund_events())
    record = HandoffRecord.model_validate(refund_record())
    labelled = label_user_claims(record, events)
    assert [i.user_claim for _, _, i in labelled.items()] == [False, False, False, False]
