"""Re-citation of items without values and answered open questions moved to facts:
deterministic repairs before validation, under the shipped aids, that spare the retry
call (the scripted model fails on any call it was not given)."""

from __future__ import annotations

import json

from agents.events import Event, Part
from agents.models.scripted import ScriptedModel, json_text
from agents.sessions.service import InMemorySessionService
from agents.summary.aids.answered_questions import move_answered_questions
from agents.summary.aids.policy import SmallModelAids
from agents.summary.aids.recitation import recite_unsupported, supporting_events
from agents.summary.checks.validator import Validator
from agents.summary.entities import EntityExtractor
from agents.summary.incremental import IncrementalSummarizer
from agents.summary.merge import ASKED_PREFIX
from agents.summary.record import HandoffRecord
from agents.summary.results import Summary
from agents.summary.service import SummaryService
from agents.summary.windows import InMemoryWindowStore
from bot.config import Settings
from bot.evals.dataset import numbered
from bot.wiring import summary_aids
from tests.agents.summary.conftest import APP, agent, handoff, item, make_session, user

# No value the extractors know: every item is judged by its content words.
TABLE = [
    user("Hi, I'd like to book a table at the restaurant tonight."),  # e1
    agent("Sure. How many guests will be joining you?"),  # e2
    user("Four of us, and we need a quiet corner please."),  # e3
    agent("A quiet corner for four is free tonight; it is now reserved for you."),  # e4
]
GOAL = "Book a restaurant table for tonight"
COMMITMENT = item("The agent reserved a quiet corner table for four tonight", "e4")


def shipped() -> SmallModelAids:
    """The aids the bot gives the embedded model with every setting at its default."""
    aids = summary_aids(Settings(slack_bot_token="xoxb-test", _env_file=None))
    assert aids.ground_citations and aids.complete_coverage
    return aids


async def summarize(events: list[Event], *answers: str) -> tuple[Summary, ScriptedModel]:
    model = ScriptedModel(answers)
    result = await SummaryService(model, aids=shipped()).summarize(
        await make_session(InMemorySessionService(), events)
    )
    assert isinstance(result, Summary), result
    model.assert_complete()
    return result, model


def record(**sections: list[dict[str, object]]) -> HandoffRecord:
    return HandoffRecord.model_validate(handoff(GOAL, **sections))


def problems(draft: dict[str, object], events: list[Event]) -> list[str]:
    checked = Validator().validate(json.dumps(draft), events)
    return [str(p) for p in checked.problems]


async def test_an_item_citing_the_neighbouring_turn_is_recited_and_passes_first() -> None:
    draft = handoff(
        GOAL,
        facts=[item("The customer wants a quiet corner", "e2")],
        commitments=[COMMITMENT],
    )
    assert problems(draft, numbered(TABLE)) == ["fact 1 cites e2, which does not support it"]
    result, _ = await summarize(TABLE, json_text(draft))
    assert result.attempts == 1 and result.attempt_log[0].passed
    assert result.attempt_log[0].recited_items == 1
    [fact] = result.record.facts
    # e3 and e4 both say "quiet corner": the earliest of the most specific is enough.
    assert (fact.text, fact.sources) == ("The customer wants a quiet corner", ["e3"])
    # The user said it: re-cited to the user's turn, it is still the user's claim.
    assert fact.user_claim


async def test_an_item_no_event_supports_is_dropped_and_counted_never_reworded() -> None:
    draft = handoff(
        GOAL,
        facts=[item("Weather is sunny and warm", "e1"), item("A quiet corner was asked", "e3")],
        commitments=[COMMITMENT],
    )
    result, _ = await summarize(TABLE, json_text(draft))
    assert result.attempts == 1
    log = result.attempt_log[0]
    assert (log.unsupported_items, log.recited_items) == (1, 0)
    assert [f.text for f in result.record.facts] == ["A quiet corner was asked"]


async def test_an_item_stating_a_value_no_event_holds_is_dropped_and_the_window_passes() -> None:
    """A small model's date that no event writes ("April 4th" in a thread of March dates)
    cannot be supported by any citation: the item is dropped before validation, counted,
    and the record passes on its first attempt with every value the thread states; the
    same date written in another form ("March 3rd" for "2019-03-03") is kept."""
    events = [
        user("I need a rental car in Las Vegas from the 3rd of March."),  # e1
        agent("GetCarsAvailable found an Audi A8 from 2019-03-03 for $27.00 a day."),  # e2
    ]
    draft = handoff(
        "Rent a car in Las Vegas",
        facts=[
            item("The car is picked up on April 4th", "e1", "e2"),
            item("An Audi A8 is available from March 3rd for $27.00 a day", "e2"),
        ],
    )
    assert "fact 1 cites e1, e2, which do not mention April 4th" in problems(
        draft, numbered(events)
    )
    result, _ = await summarize(events, json_text(draft))
    log = result.attempt_log[0]
    assert result.attempts == 1 and log.passed and log.unsupported_items == 1
    assert [f.text for f in result.record.facts] == [
        "An Audi A8 is available from March 3rd for $27.00 a day"
    ]


async def test_an_answered_open_question_is_moved_to_facts_citing_its_answer() -> None:
    draft = handoff(
        GOAL,
        commitments=[COMMITMENT],
        open_questions=[item("Is a quiet corner free tonight?", "e3")],
    )
    assert problems(draft, numbered(TABLE)) == [
        "open question 1 is possibly answered in e4; move it to facts or commitments"
    ]
    result, _ = await summarize(TABLE, json_text(draft))
    assert result.attempts == 1 and result.attempt_log[0].answered_items == 1
    assert result.record.open_questions == []
    [fact] = result.record.facts
    assert fact.text == ASKED_PREFIX + "Is a quiet corner free tonight?"
    assert fact.sources == ["e3", "e4"]


async def test_a_question_recited_onto_its_own_turn_and_then_answered_is_moved() -> None:
    # The question cites the agent's greeting. e4 shares the most of its words, but it is
    # the answer: a question is re-cited to the earliest event that raises it (e3), so
    # the answer after it is found and the question moved. Both repairs, no retry.
    draft = handoff(
        GOAL,
        commitments=[COMMITMENT],
        open_questions=[item("Is a quiet corner free?", "e2")],
    )
    result, _ = await summarize(TABLE, json_text(draft))
    log = result.attempt_log[0]
    assert (result.attempts, log.recited_items, log.answered_items) == (1, 1, 1)
    assert [f.sources for f in result.record.facts] == [["e3", "e4"]]


def test_the_most_specific_events_at_most_three_each_adding_a_term() -> None:
    content = {
        "e1": "refund the shipping fee",
        "e2": "the shipping fee and the refund, again: shipping fee refund",
        "e3": "the parcel was late",
        "e4": "the parcel was damaged",
        "e5": "shipping is free",
        "e6": "nothing to see",
    }
    text = "Refund the shipping fee for the late, damaged parcel"
    # e1 and e2 share two terms each (e1 is earlier) and e2 adds none; e3 adds "parcel"
    # and "late", e4 "damaged"; e5 would add nothing, and three is the most anyway.
    assert supporting_events(text, content) == ["e1", "e3", "e4"]
    assert supporting_events("Nothing shared here at all", {"e1": "refund"}) == []


def test_an_item_citing_a_source_too_short_to_judge_is_left_alone() -> None:
    events = numbered([user("Are you open late?"), agent("Yes, until six.")])
    draft = record(facts=[item("The shop opens late", "e2")])
    extractor = EntityExtractor()
    recited = recite_unsupported(draft, events, extractor=extractor, entities=[])
    assert (recited.recited, recited.dropped) == (0, 0) and recited.record == draft


async def test_a_window_item_is_recited_within_its_window_never_before_it() -> None:
    # Window 2 (e5-e8) says "quiet corner" again in e7; e3, in window 1, said it first.
    turns = [
        ("Hi, I'd like to book a table for order A-1001.", "Sure, booking for A-1001."),
        ("We need a quiet corner please.", "Noted."),
        ("Can you confirm the booking for A-1002?", "Booking A-1002 is confirmed."),
        ("Is the quiet corner kept?", "Yes, the quiet corner stays reserved, A-1002."),
    ]
    answers = [
        json.dumps(
            handoff(
                "Book a table",
                facts=[item("Booking for A-1001 requested", "e1", "e2")],
                open_questions=[item("Whether a quiet corner is possible", "e3")],
            )
        ),
        json.dumps(
            handoff(
                "Book a table",
                facts=[
                    item("Booking A-1002 is confirmed", "e6"),
                    # Cites the window's first turn, which does not say it.
                    item("The customer prefers a quiet corner", "e5"),
                    # Only e1, before the window, says "like" or "table".
                    item("The customer would like a table", "e5"),
                ],
            )
        ),
    ]
    sessions = InMemorySessionService()
    model = ScriptedModel(answers)
    store = InMemoryWindowStore()
    summarizer = IncrementalSummarizer(
        SummaryService(model, aids=shipped()), store, interval=2, session_service=sessions
    )
    session = await sessions.create_session(app_name=APP, user_id="u1")
    for number, (question, reply) in enumerate(turns, start=1):
        inv = f"inv{number}"
        for author, text in (("user", question), ("billing_agent", reply)):
            await sessions.append_event(
                session, Event(author=author, invocation_id=inv, parts=(Part(text=text),))
            )
        await summarizer(session, inv)
    whole = await sessions.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert whole is not None
    windows = await store.windows(session.id)
    assert [(w.span.label(), w.first_attempt_pass, w.attempts) for w in windows] == [
        ("e1–e4", True, 1),
        ("e5–e8", True, 1),
    ]
    second = HandoffRecord.model_validate(windows[1].record)
    assert {s for _, _, i in second.items() for s in i.sources} <= {"e5", "e6", "e7", "e8"}
    texts = {i.text: i.sources for _, _, i in second.items()}
    assert texts["The customer prefers a quiet corner"] == ["e7"]
    # No event of the window supports it: dropped, rather than cited outside the window.
    assert "The customer would like a table" not in texts
    result = await summarizer.summarize(whole)
    assert isinstance(result, Summary) and result.gaps == ()
    model.assert_complete()


async def test_a_dropped_question_that_held_the_only_value_is_quoted_back() -> None:
    # The question names B-2040 but cites the agent's turn, and a later agent turn shares
    # its topic: moved to facts it would cite no event holding B-2040, so it is dropped,
    # and the completion pass, after it, asks for the value the record now misses.
    events = [
        user("Is my other order B-2040 affected by the shipping delay?"),  # e1
        agent("Let me check the shipping delay for you."),  # e2
        agent("The shipping delay only affects parcels sent by air."),  # e3
    ]
    draft = handoff(
        "Learn whether another order is delayed",
        open_questions=[item("Is order B-2040 affected by the shipping delay?", "e2")],
    )
    completion = json.dumps({"text": "The customer asks whether order B-2040 is delayed."})
    result, _ = await summarize(events, json_text(draft), completion)
    log = result.attempt_log[0]
    assert (result.attempts, log.answered_items, log.completed_items) == (1, 1, 1)
    assert result.record.open_questions == []
    [fact] = result.record.facts
    assert "B-2040" in fact.text and fact.sources == ["e1"]
    assert "B-2040" in result.metadata["high_value_entities"]


def test_the_second_pass_after_grounding_moves_but_never_drops() -> None:
    events = numbered(
        [
            user("Is my other order B-2040 affected by the shipping delay?"),
            agent("Let me check the shipping delay for you."),
            agent("The shipping delay only affects parcels sent by air."),
        ]
    )
    question = item("Is order B-2040 affected by the shipping delay?", "e2")
    draft = record(open_questions=[question])
    extractor = EntityExtractor()
    entities = extractor.extract(events)
    kept = move_answered_questions(
        draft, events, extractor=extractor, entities=entities, drop=False
    )
    assert (kept.moved, kept.dropped) == (
        0,
        0,
    ) and kept.record.open_questions == draft.open_questions
    dropped = move_answered_questions(draft, events, extractor=extractor, entities=entities)
    assert (dropped.moved, dropped.dropped) == (0, 1) and dropped.record.open_questions == []


async def test_the_repairs_are_off_with_the_other_grounding_aids() -> None:
    # SUMMARY_GROUND_CITATIONS=false: the validator names the unsupported citation and
    # the retry is asked for, as before.
    draft = handoff(GOAL, facts=[item("The customer wants a quiet corner", "e2")])
    fixed = handoff(GOAL, facts=[item("The customer wants a quiet corner", "e3")])
    model = ScriptedModel([json_text(draft), json_text(fixed)])
    result = await SummaryService(model, aids=SmallModelAids(ground_citations=False)).summarize(
        await make_session(InMemorySessionService(), TABLE)
    )
    assert isinstance(result, Summary) and result.attempts == 2
    assert result.attempt_log[0].recited_items == 0
    model.assert_complete()


def test_an_id_outside_the_transcript_beside_a_supporting_event_is_removed() -> None:
    events = numbered(TABLE)
    draft = record(facts=[item("A quiet corner was asked for", "e3", "e12")])
    recited = recite_unsupported(draft, events, extractor=EntityExtractor(), entities=[])
    assert recited.recited == 1 and recited.record.facts[0].sources == ["e3"]


def test_a_moved_question_keeps_the_answer_within_three_citations() -> None:
    events = numbered(TABLE)
    question = item("Is a quiet corner free tonight?", "e1", "e2", "e3")
    draft = record(open_questions=[question])
    moved = move_answered_questions(draft, events, extractor=EntityExtractor(), entities=[])
    assert (moved.moved, moved.dropped) == (1, 0)
    assert moved.record.facts[0].sources == ["e1", "e2", "e4"]
