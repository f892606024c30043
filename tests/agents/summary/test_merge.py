"""The deterministic merge of window records: union, duplicates by value, superseded
decisions, resolved questions, the latest goal."""

from __future__ import annotations

import pytest

from agents.events import Event, Part
from agents.summary.merge import ASKED_PREFIX, CHANGED_PREFIXES, merge_records
from agents.summary.problems import Problem, ProblemKind
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


def test_a_later_decision_that_says_it_replaces_an_earlier_one_supersedes_it() -> None:
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
    assert merged.facts == []  # A-1001 is stated again: nothing of the earlier one is lost


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


def test_a_flight_change_and_a_seat_choice_on_the_new_flight_both_stand() -> None:
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
    assert [d.text for d in merged.decisions] == [
        "Flight HAT148 changed to HAT200",
        "HAT200 booked in economy plus",
    ]
    assert merged.facts == []


BOTH_EVENTS = [
    said("user", "Order A-1001 arrived broken. Please refund it.", 1),
    said("agent", "Refund of $25.00 for A-1001 issued to your card.", 2),
    said("user", "Can you also send a replacement for A-1001? I still need one.", 3),
    said("agent", "Done: a replacement for A-1001 ships tomorrow.", 4),
]


def test_a_refund_and_a_replacement_for_one_order_both_stand() -> None:
    merged = merge_records(
        [
            record("Refund", decisions=[Item(text="Refund $25.00 for A-1001", sources=["e2"])]),
            record(
                "Replacement",
                decisions=[Item(text="Send a replacement for A-1001", sources=["e3", "e4"])],
            ),
        ],
        BOTH_EVENTS,
    )
    assert [d.text for d in merged.decisions] == [
        "Refund $25.00 for A-1001",
        "Send a replacement for A-1001",
    ]
    assert merged.facts == []


REBOOK_EVENTS = [
    *FLIGHT_EVENTS,
    said("user", "Sorry, put me on HAT300 instead of HAT200.", 5),
    said("agent", "Done: you are on HAT300 now.", 6),
]


def test_a_decision_that_names_the_one_it_replaces_supersedes_it_and_keeps_its_values() -> None:
    merged = merge_records(
        [
            record(
                "Change flight",
                decisions=[Item(text="Flight HAT148 changed to HAT200", sources=["e1", "e2"])],
            ),
            record(
                "Rebook",
                decisions=[Item(text="Rebooked on HAT300", sources=["e5", "e6"])],
            ),
        ],
        REBOOK_EVENTS,
    )
    assert [d.text for d in merged.decisions] == ["Rebooked on HAT300"]
    [fact] = merged.facts
    assert fact.text == "Decided earlier, then changed: Flight HAT148 changed to HAT200"
    assert fact.sources == ["e1", "e2"]


def test_a_replacement_the_check_rejects_is_undone() -> None:
    seen: list[list[str]] = []

    def check(merged: HandoffRecord) -> list[Problem]:
        seen.append([d.text for d in merged.decisions])
        if len(merged.decisions) < 2:
            return [Problem(ProblemKind.DROPPED_ENTITY, ("decisions",), "a decision went missing")]
        return []

    merged = merge_records(
        [
            record("Refund", decisions=[Item(text="Refund A-1001 by card", sources=["e2"])]),
            record(
                "Refund",
                decisions=[Item(text="Refund A-1001 as store credit", sources=["e3", "e4"])],
            ),
        ],
        EVENTS,
        check=check,
    )
    assert [d.text for d in merged.decisions] == [
        "Refund A-1001 by card",
        "Refund A-1001 as store credit",
    ]
    assert ["Refund A-1001 as store credit"] in seen  # the replacement was checked


ADDRESS_EVENTS = [
    said("user", "Please ship order A-1001 to 12 Elm Street.", 1),
    said("agent", "Noted: the delivery address for A-1001 is 12 Elm Street.", 2),
    said("user", "I have moved. My new delivery address is 40 Oak Avenue.", 3),
    said("agent", "Updated: the new delivery address for A-1001 is 40 Oak Avenue.", 4),
]


def test_a_later_fact_giving_the_same_slot_a_new_value_replaces_the_stale_one() -> None:
    merged = merge_records(
        [
            record(
                "Ship A-1001",
                facts=[
                    Item(text="The delivery address for A-1001 is 12 Elm Street", sources=["e2"])
                ],
            ),
            record(
                "Ship A-1001",
                facts=[
                    Item(
                        text="New delivery address for A-1001: 40 Oak Avenue", sources=["e3", "e4"]
                    )
                ],
            ),
        ],
        ADDRESS_EVENTS,
    )
    assert [f.text for f in merged.facts] == ["New delivery address for A-1001: 40 Oak Avenue"]


CHECK_IN_EVENTS = [
    said("user", "Book the Hilton, check-in on March 8th.", 1),
    said("agent", "Booked: check-in on March 8th.", 2),
    said("user", "Actually, can the check-in be March 10th?", 3),
    said("agent", "Done: check-in moved to March 10th.", 4),
]


def test_a_changed_date_keeps_the_earlier_one_only_as_changed() -> None:
    merged = merge_records(
        [
            record(
                "Hotel", facts=[Item(text="Check-in at the Hilton on March 8th", sources=["e2"])]
            ),
            record(
                "Hotel", facts=[Item(text="Check-in moved to March 10th", sources=["e3", "e4"])]
            ),
        ],
        CHECK_IN_EVENTS,
    )
    assert [f.text for f in merged.facts] == [
        "Check-in moved to March 10th",
        CHANGED_PREFIXES["facts"] + "Check-in at the Hilton on March 8th",
    ]


def test_a_changed_promise_keeps_the_earlier_one_only_as_changed() -> None:
    events = [
        said("user", "When will you call?", 1),
        said("agent", "We will call you back on Monday.", 2),
        said("user", "Monday is bad for me.", 3),
        said("agent", "No problem, we will call you back on Tuesday instead.", 4),
    ]
    merged = merge_records(
        [
            record("Call", commitments=[Item(text="Call the user back on Monday", sources=["e2"])]),
            record(
                "Call", commitments=[Item(text="Call the user back on Tuesday", sources=["e4"])]
            ),
        ],
        events,
    )
    assert [c.text for c in merged.commitments] == ["Call the user back on Tuesday"]
    assert [f.text for f in merged.facts] == [
        CHANGED_PREFIXES["commitments"] + "Call the user back on Monday"
    ]


def test_two_flights_sharing_a_slot_without_a_stated_change_both_stand() -> None:
    events = [
        said("user", "Book flight HAT148 on May 5.", 1),
        said("agent", "Booked: outbound flight HAT148 on May 5.", 2),
        said("user", "I now need a return flight on May 12 too.", 3),
        said("agent", "Booked: return flight HAT200 on May 12.", 4),
    ]
    facts = [
        Item(text="Outbound flight HAT148 on May 5", sources=["e2"]),
        Item(text="Return flight HAT200 on May 12", sources=["e3", "e4"]),
    ]
    merged = merge_records(
        [record("Flights", facts=facts[:1]), record("Flights", facts=facts[1:])], events
    )
    assert merged.facts == facts


def test_a_new_thing_for_the_same_order_changes_no_slot_of_it() -> None:
    events = [
        said("user", "Order A-1001 arrived broken.", 1),
        said("agent", "Order A-1001 was refunded.", 2),
        said("user", "Can I get a new one as well?", 3),
        said("agent", "Yes: a new unit for order A-1001 ships tomorrow.", 4),
    ]
    facts = [
        Item(text="Order A-1001 was refunded", sources=["e2"]),
        Item(text="A new unit for order A-1001 ships tomorrow", sources=["e3", "e4"]),
    ]
    merged = merge_records(
        [record("Broken", facts=facts[:1]), record("Broken", facts=facts[1:])], events
    )
    assert merged.facts == facts
