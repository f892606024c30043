"""Citation grounding, and the checklist plan the summariser is given."""

from __future__ import annotations

import json
from dataclasses import replace

from agents.events import Event
from agents.models.scripted import ScriptedModel, json_text
from agents.sessions.service import InMemorySessionService
from agents.summary.aids.checklist import build_checklist, checklist, group_values
from agents.summary.aids.example_copies import without_example_copies
from agents.summary.aids.grounding import Grounded, ground_citations
from agents.summary.aids.policy import SmallModelAids
from agents.summary.checks.validator import ValidationResult, Validator
from agents.summary.entities import EntityExtractor
from agents.summary.record import HandoffRecord
from agents.summary.service import Summary, SummaryService
from agents.summary.transcript import render_transcript
from bot.evals.dataset import numbered
from tests.agents.summary.conftest import (
    agent,
    handoff,
    item,
    make_session,
    refund_events,
    refund_record,
    user,
)

EVENTS = numbered(refund_events())
PASSING = refund_record(open_questions=[item("Is order B-2040 affected too?", "e8")])


def grounded_check(
    record: dict[str, object], events: list[Event] = EVENTS, *, ground: bool = True
) -> tuple[ValidationResult, Grounded | None]:
    """The service's order: parse once, ground (the repair), then check."""
    validator = Validator()
    parsed = validator.parse(json.dumps(record))
    assert parsed.record is not None
    grounded = ground_citations(parsed.record, events) if ground else None
    if grounded is not None:
        parsed = replace(parsed, record=grounded.record)
    return validator.check(parsed, events), grounded


def validate(record: dict[str, object], *, ground: bool) -> tuple[list[str], int]:
    result, grounded = grounded_check(record, ground=ground)
    return [str(p) for p in result.problems], grounded.corrected_items if grounded else 0


def test_neighbouring_turn_is_regrounded_to_the_event_holding_the_value() -> None:
    # The model cites the agent's reply (e7) for the user's question about B-2040 (e8).
    record = refund_record(open_questions=[item("Is order B-2040 affected too?", "e7")])
    problems, _ = validate(record, ground=False)
    assert problems == ["open question 1 cites e7, which does not mention B-2040"]

    problems, grounded = validate(record, ground=True)
    assert problems == [] and grounded == 1
    fixed = grounded_check(record)[0].record
    assert fixed is not None and fixed.open_questions[0].sources == ["e8"]


def test_grounding_keeps_supporting_citations_and_adds_the_missing_one() -> None:
    record = HandoffRecord.model_validate(
        refund_record(facts=[item("A-1001 shipping fee of $12.50 refunded", "e2", "e6")])
    )
    grounded = ground_citations(record, EVENTS)
    # e2 holds A-1001 and stays; the tool result e6 holds neither value and goes; for
    # $12.50 the event holding the most of the item's values wins: the refund call e5.
    assert grounded.record.facts[0].sources == ["e2", "e5"]
    assert grounded.corrected_items == 1


def test_grounding_never_removes_the_users_source() -> None:
    record = HandoffRecord.model_validate(
        refund_record(facts=[item("A-1001 shipping fee of $12.50 refunded", "e2", "e8")])
    )
    grounded = ground_citations(record, EVENTS)
    # e8 (the user's) holds neither value but stays: only agent sources are dropped.
    assert grounded.record.facts[0].sources == ["e2", "e8", "e5"]


def test_grounding_adds_no_agent_turn_that_merely_names_the_same_order() -> None:
    events = numbered(
        [
            user("Your colleague promised me a full refund of $500 by Friday."),
            agent("Let me look into order A-4411."),
            user("Yes, it is order A-4411."),
        ]
    )
    record = HandoffRecord.model_validate(
        handoff("Refund", facts=[item("Full refund of $500 for order A-4411", "e1")])
    )
    grounded = ground_citations(record, events)
    # A-4411 is missing from e1: the agent's e2 names it first but does not say $500, so
    # the user's own e3 is added instead.
    assert grounded.record.facts[0].sources == ["e1", "e3"]


def test_an_invented_id_is_replaced_only_by_events_that_hold_every_value() -> None:
    # A window's model copies the worked example's ids: e99 is in no transcript. The
    # item's values are all located, so its sources become the events that hold them;
    # the invented id counts as a user's source, so the agent's e3 must state both.
    invented = refund_record(
        facts=[item("Order A-1001 shipped on 2024-09-28", "e1", "e99")],
        open_questions=PASSING["open_questions"],
    )
    problems, grounded = validate(invented, ground=True)
    assert problems == [] and grounded == 1
    result, _ = grounded_check(invented)
    assert result.record is not None and result.record.facts[0].sources == ["e1", "e3"]

    # Without values nothing can be located: the invented id is reported, not hidden.
    unlocated = refund_record(
        facts=[item("The customer was unhappy about the delay", "e99")],
        open_questions=PASSING["open_questions"],
    )
    problems, grounded = validate(unlocated, ground=True)
    assert "fact 1 cites e99, which is not in the transcript" in problems and grounded == 0


def test_grounding_never_hides_an_unsupported_value() -> None:

    nowhere = refund_record(
        facts=[item("A refund of $99.00 was issued for A-1001", "e2")],
        open_questions=PASSING["open_questions"],
    )
    problems, grounded = validate(nowhere, ground=True)
    assert problems == ["fact 1 cites e2, which does not mention $99.00"] and grounded == 0


def test_items_without_values_are_left_to_the_content_word_check() -> None:
    record = refund_record(
        decisions=[item("Apologise for the delay", "e8")],
        open_questions=PASSING["open_questions"],
    )
    _, grounded = validate(record, ground=True)
    assert grounded == 0


def test_deadline_the_agent_never_stated_is_named() -> None:
    events = numbered(
        [
            user("Where is my refund for A-1001?"),
            agent("I've issued the refund for A-1001."),
        ]
    )
    record = handoff(
        "Refund for A-1001",
        commitments=[item("Refund for A-1001 issued, within five working days", "e2")],
    )
    problems = [str(p) for p in Validator().validate(json.dumps(record), events).problems]
    assert problems == [
        "commitment 1 says 'within five working days', but e2 does not say it; "
        "state only deadlines the agent stated"
    ]


def test_checklist_groups_values_by_the_fewest_events_and_attaches_promise_values() -> None:
    entities = EntityExtractor().extract(EVENTS)
    values = [e for e in entities if e.high_value]
    groups = group_values(EVENTS, values)
    # e2 (the lookup call) holds A-1001 and the date is only in its result (e3).
    covered = {v for g in groups for v in g.values}
    assert covered == {e.value for e in values}
    assert all(len(g.values) >= 1 for g in groups) and len(groups) < len(values)

    text = checklist(EVENTS, entities)
    assert '- e7: "I\'ve issued a refund of $12.50 for the shipping fee on A-1001."' in text
    assert "(keep $12.50, A-1001)" in text or "(keep A-1001, $12.50)" in text
    assert '- e8 (user: "Is my other order B-2040 affected too?"): B-2040' in text


def test_secrets_are_masked_before_the_model_sees_them() -> None:
    events = numbered([user("My account is 84318931431 and my PIN is 5380."), agent("Thanks.")])
    entities = EntityExtractor().extract(events)
    assert any(e.sensitive and e.value == "5380" for e in entities)
    text = render_transcript(events, mask=entities).text
    assert "5380" not in text and "84318931431" in text


def test_bare_ordinal_is_not_demanded() -> None:
    events = numbered([user("Take me to 5th and Main instead."), agent("Done, booking 128.")])
    record = handoff(
        "Change the destination", facts=[item("Destination changed; booking 128", "e2")]
    )
    assert Validator().validate(json.dumps(record), events).problems == []


def test_item_restating_a_masked_secret_is_dropped_and_counted() -> None:
    events = numbered([agent("Your PIN please."), user("5380"), agent("Thanks, verified.")])
    record = handoff(
        "Verify the caller",
        facts=[item("The user's PIN is ••••.", "e1"), item("The caller was verified", "e3")],
    )
    result, grounded = grounded_check(record, events)
    assert result.problems == [] and grounded is not None and grounded.withheld_items == 1
    assert result.record is not None and [i.text for i in result.record.facts] == [
        "The caller was verified"
    ]


def test_a_date_written_with_its_month_name_is_the_same_date() -> None:
    events = numbered(
        [
            user("Please move reservation JG7FMM to 2024-05-24."),
            agent("Done: JG7FMM now flies on 2024-05-24."),
        ]
    )
    record = handoff("Move JG7FMM", facts=[item("JG7FMM was moved to May 24, 2024", "e2")])
    assert Validator().validate(json.dumps(record), events).problems == []
    record["facts"] = [item("JG7FMM was moved to May 25, 2024", "e2")]
    problems = [str(p) for p in Validator().validate(json.dumps(record), events).problems]
    assert problems == [
        "fact 1 cites e2, which does not mention May 25, 2024",
        "dropped entity 2024-05-24",
    ]


def test_retry_locations_follow_the_checklist_plan() -> None:
    entities = EntityExtractor().extract(EVENTS)
    plan = build_checklist(EVENTS, entities)
    where = plan.locations()
    # $12.50 is kept by the e7 promise line, so a retry sends it there, not to a fact.
    assert where["$12.50"] == "e7 (the agent's promise)"
    assert where["b-2040"].startswith('e8 (user: "Is my other order B-2040')
    assert plan.text() == checklist(EVENTS, entities)


def test_checklist_masks_secrets_in_quoted_promises_and_excerpts() -> None:
    events = numbered(
        [
            user("My order is A-1001 and my PIN is 4821."),
            agent("I've updated the PIN 4821 on A-1001 and I will email you a receipt."),
        ]
    )
    entities = EntityExtractor().extract(events)
    text = checklist(events, entities)
    assert "4821" not in text
    assert "••••" in text and "A-1001" in text


async def test_an_item_copied_from_the_worked_example_is_dropped_and_counted() -> None:
    # The embedded model's whole-thread record of a tau-bench airline thread carried the
    # example's commitment ("Q-5512 ... ships within two days", citing e4) and failed twice.
    copied = refund_record(
        commitments=[
            item("I've issued a refund of $12.50 for the shipping fee on A-1001", "e7"),
            item("A replacement for Q-5512 was issued and ships within two days", "e4"),
        ],
        open_questions=PASSING["open_questions"],
    )
    model = ScriptedModel([json_text(copied)])
    result = await SummaryService(model, aids=SmallModelAids(ground_citations=True)).summarize(
        await make_session(InMemorySessionService(), refund_events())
    )
    assert isinstance(result, Summary) and result.attempts == 1
    assert result.attempt_log[0].copied_items == 1
    assert [c.text for c in result.record.commitments] == [
        "I've issued a refund of $12.50 for the shipping fee on A-1001"
    ]
    model.assert_complete()


def test_an_example_value_the_thread_itself_holds_is_kept() -> None:
    events = numbered([user("My order Q-5512 is late."), agent("Q-5512 ships tomorrow.")])
    record = HandoffRecord.model_validate(
        handoff("Find order Q-5512", facts=[item("Order Q-5512 ships tomorrow", "e2")])
    )
    kept = without_example_copies(record, events, EntityExtractor())
    assert kept.dropped == 0 and kept.record == record
