"""The deterministic merge of window records: union, duplicates by value, superseded
decisions, resolved questions, the latest goal."""

from __future__ import annotations

import pytest

from agents.events import Event, Part
from agents.summary.merge import ASKED_PREFIX, merge_records
from agents.summary.record import HandoffRecord, Item


def said(author: str, text: str, seq: int) -> Event:
    return Event(id=f"e{seq}", author=author, parts=(Part(text=text),))


EVENTS = [
    said("user", "Please refund order A-1001, and is B-2040 affected?", 1),
    said("agent", "We will refund order A-1001 by card.", 2),
    said("user", "Actually, refund A-1001 as store credit instead.", 3),
    said("agent", "Done: order A-1001 will be refunded as store credit.", 4),
]


def record(goal: str, **sections: list[Item]) -> HandoffRecord:
    return HandoffRecord(goal=goal, **sections)


def test_union_keeps_every_item_and_merges_duplicates_by_value() -> None:
    merged = merge_records(
        [
            record("Refund A-1001", facts=[Item(text="Refund for A-1001", sources=["e2"])]),
            record(
                "Refund A-1001 as store credit",
                facts=[
                    Item(text="A refund for A-1001 as store credit", sources=["e4"]),
                    Item(text="The user asked about B-2040", sources=["e1"]),
                ],
            ),
        ],
        EVENTS,
    )
    assert [(f.text, f.sources) for f in merged.facts] == [
        ("A refund for A-1001 as store credit", ["e4", "e2"]),
        ("The user asked about B-2040", ["e1"]),
    ]
    assert merged.goal == "Refund A-1001 as store credit"  # the latest window's


def test_a_later_decision_supersedes_an_earlier_one_about_the_same_values() -> None:
    merged = merge_records(
        [
            record("Refund", decisions=[Item(text="Refund A-1001 by card", sources=["e2"])]),
            record(
                "Refund",
                decisions=[Item(text="Refund A-1001 as store credit", sources=["e3", "e4"])],
            ),
        ],
        EVENTS,
    )
    assert [d.text for d in merged.decisions] == ["Refund A-1001 as store credit"]


def test_items_without_values_merge_only_when_they_say_the_same() -> None:
    merged = merge_records(
        [
            record("Help", commitments=[Item(text="We will call back.", sources=["e2"])]),
            record(
                "Help",
                commitments=[
                    Item(text="We will  call back.", sources=["e4"]),
                    Item(text="We will write back.", sources=["e4"]),
                ],
            ),
        ],
        EVENTS,
    )
    assert [c.text for c in merged.commitments] == ["We will call back.", "We will write back."]


def test_a_resolved_question_whose_values_nothing_else_states_is_kept_as_asked() -> None:
    question = Item(text="Is B-2040 affected?", sources=["e1"])
    later = [said("agent", "B-2040 is fine as well.", 5)]
    merged = merge_records(
        [record("Refund", open_questions=[question]), record("Refund")], [*EVENTS, *later]
    )
    assert merged.open_questions == []
    assert [f.text for f in merged.facts] == [ASKED_PREFIX + "Is B-2040 affected?"]
    assert merged.facts[0].user_claim  # only the user's message says it


def test_merging_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one"):
        merge_records([], EVENTS)


FLIGHT_EVENTS = [
    said("user", "Please move me from flight HAT148 to HAT200.", 1),
    said("agent", "Changed: you are now on HAT200 instead of HAT148.", 2),
    said("user", "On HAT200, can I sit in economy plus?", 3),
    said("agent", "Done: HAT200 in economy plus.", 4),
]


def test_a_superseded_decision_keeps_the_values_only_it_states_as_a_fact() -> None:
    merged = merge_records(
        [
            record(
                "Change flight",
                decisions=[Item(text="Flight HAT148 changed to HAT200", sources=["e1", "e2"])],
            ),
            record(
                "Seat on HAT200",
                decisions=[Item(text="HAT200 booked in economy plus", sources=["e3", "e4"])],
            ),
        ],
        FLIGHT_EVENTS,
    )
    assert [d.text for d in merged.decisions] == ["HAT200 booked in economy plus"]
    [fact] = merged.facts
    assert fact.text.startswith("Decided earlier, then changed: ")
    assert "HAT148" in fact.text and fact.sources == ["e1", "e2"]


def test_a_superseded_decision_whose_values_are_all_stated_again_is_gone() -> None:
    merged = merge_records(
        [
            record("Change", decisions=[Item(text="Move to HAT200", sources=["e1"])]),
            record("Seat", decisions=[Item(text="HAT200 in economy plus", sources=["e4"])]),
        ],
        FLIGHT_EVENTS,
    )
    assert [d.text for d in merged.decisions] == ["HAT200 in economy plus"]
    assert merged.facts == []
