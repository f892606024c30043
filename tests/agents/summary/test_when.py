"""Dates and times compared as values, in any written form: the validator no longer
fails a window for "July 7th" where the event wrote "7 July", or "4 PM" for "16:00"."""

from __future__ import annotations

import json

import pytest

from agents.events import Event
from agents.summary.checks.validator import Validator
from agents.summary.entities import Entity, mentions
from agents.summary.when import same_moment
from bot.evals.dataset import numbered
from tests.agents.summary.conftest import agent, handoff, item, user


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("July 7th", "Your check-in is on 7 July."),
        ("July 7th", "Booked for 07/07."),
        ("7 July", 'check_in {"date": "2026-07-07"}'),
        ("4 PM", "The call is at 16:00."),
        ("16:00", "Call me back at 4pm."),
        ("Tuesday", "Your appointment is on 7 July 2026."),  # a Tuesday
        ("May 24, 2024", "flights on 2024-05-24 were downgraded"),
        ("5th", "Your flight is on March 5."),  # a day of the month alone: any month
        ("the 5th", "I'd like to go on 5 March."),
    ],
)
def test_a_date_or_time_matches_the_same_value_written_otherwise(value: str, text: str) -> None:
    assert same_moment(value, text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("July 7th", "Your check-in is on 8 July."),
        ("4 PM", "The call is at 16:30."),
        ("Tuesday", "Your appointment is on 7 July."),  # no year: the weekday is not fixed
        ("Wednesday", "Your appointment is on 7 July 2026."),
        ("May 24, 2024", "on May 24, 2023"),
        ("July 7th", "order A-1001 for $7.07"),
        ("5th", "Your flight is on March 6."),
        ("March 13th", "See you on the 13th."),  # the month is not written
        ("4 PM", "See you on the 4th."),
        ("5th", "It takes 5 days."),  # a bare number is no day
        ("Friday", "a sedan on 2019-03-05"),  # an ISO date is never day first (3 May 2019)
        ("May 3rd", 'GetCars {"start_date": "2019-03-05"}'),
    ],
)
def test_a_different_or_unfixed_date_or_time_does_not_match(value: str, text: str) -> None:
    assert not same_moment(value, text)


def test_an_entity_date_or_time_is_mentioned_in_any_form() -> None:
    assert mentions("see you 07/07 at 16:00", Entity(type="date", value="July 7th", event_ids=()))
    assert mentions("see you 07/07 at 16:00", Entity(type="time", value="4 PM", event_ids=()))


EVENTS = numbered(
    [
        user("I need to move my check-in at the Harbor Hotel, booking HB-7741."),
        agent("Your check-in for HB-7741 is now 7 July 2026 at 16:00."),
        user("Thanks. Is that a Tuesday?"),
        agent("Yes, 2026-07-07 is a Tuesday."),
    ]
)


def problems(record: dict[str, object], events: list[Event] = EVENTS) -> list[str]:
    return [str(p) for p in Validator().validate(json.dumps(record), events).problems]


def test_the_validator_reads_the_failure_phrases_as_the_dates_and_times_they_are() -> None:
    record = handoff(
        "Move the check-in of booking HB-7741",
        facts=[
            item("Check-in for HB-7741 moved to July 7th", "e2"),
            item("Check-in for HB-7741 is at 4 PM", "e2"),
            item("The new check-in day is a Tuesday", "e4"),
        ],
    )
    assert problems(record) == []


def test_the_validator_still_names_a_date_the_source_does_not_hold() -> None:
    record = handoff(
        "Move the check-in of booking HB-7741",
        facts=[item("Check-in for HB-7741 moved to July 8th", "e2")],
    )
    assert "fact 1 cites e2, which does not mention July 8th" in problems(record)


def test_a_date_glued_to_the_next_sentence_is_read() -> None:
    events = numbered(
        [
            user("Hotel in New York, check in date is March 10th.Check out will be on 11 March."),
            agent("Booked: check-in 2019-03-10, check-out 2019-03-11."),
        ]
    )
    record = handoff(
        "Book a hotel in New York",
        facts=[
            item("Check-in is on 10 March", "e1"),
            item("Check-out is on March 11th", "e1"),
        ],
    )
    assert problems(record, events) == []
    assert same_moment("10 March", "date is March 10th.Check out")
