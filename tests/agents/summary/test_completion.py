"""The completion pass: one small, value-constrained call per checklist line a draft missed."""

from __future__ import annotations

import json

from agents.models.scripted import ScriptedModel, json_text
from agents.sessions.service import InMemorySessionService
from agents.sessions.session import Session
from agents.summary.aids.completion import MAX_GAPS
from agents.summary.aids.policy import SmallModelAids
from agents.summary.service import Summary, SummaryService
from tests.agents.summary.conftest import (
    agent,
    handoff,
    item,
    make_session,
    refund_record,
    tool,
    user,
)

COMPLETE = SmallModelAids(complete_coverage=True)


async def test_dropped_value_is_completed_by_one_small_call(refund_session: Session) -> None:
    draft = refund_record()  # the seed's first answer: it drops B-2040
    model = ScriptedModel(
        [json_text(draft), json_text({"text": "The user asks whether order B-2040 is affected"})]
    )
    service = SummaryService(model, aids=COMPLETE)

    result = await service.summarize(refund_session)

    assert isinstance(result, Summary) and result.attempts == 1
    assert result.attempt_log[0].completed_items == 1
    added = result.record.facts[-1]
    assert added.text == "The user asks whether order B-2040 is affected"
    assert added.sources == ["e8"]
    model.assert_complete()

    # The completion request is about the one event and asks for its value, briefly.
    request = model.requests[1]
    text = request.contents[0].text
    assert "[e8] user: Thanks. Is my other order B-2040 affected too?" in text
    assert "Write one fact that states B-2040" in text
    assert "<<<TRANSCRIPT" not in text
    assert (request.response_schema or {})["properties"]["text"]["maxLength"] == 120


async def test_missing_promise_is_quoted_as_a_commitment_without_a_model_call(
    refund_session: Session,
) -> None:
    draft = refund_record(
        commitments=[],
        open_questions=[{"text": "Is B-2040 affected?", "sources": ["e8"]}],
    )
    model = ScriptedModel([json_text(draft)])  # a completion call would fail the test
    service = SummaryService(model, aids=COMPLETE)

    result = await service.summarize(refund_session)

    # Both promises of e7 in the agent's own words: a restatement could swap the amounts.
    assert isinstance(result, Summary) and result.attempts == 1
    assert [(c.text, c.sources) for c in result.record.commitments] == [
        (
            "The agent said: \"I've issued a refund of $12.50 for the shipping fee on A-1001. "
            'It will arrive within five working days."',
            ["e7"],
        )
    ]
    assert result.attempt_log[0].completed_items == 1
    model.assert_complete()


async def test_no_completion_calls_when_the_draft_covers_everything(
    refund_session: Session,
) -> None:
    passing = refund_record(open_questions=[{"text": "Is B-2040 affected?", "sources": ["e8"]}])
    model = ScriptedModel([json.dumps(passing)])  # a second call would fail the test
    result = await SummaryService(model, aids=COMPLETE).summarize(refund_session)
    assert isinstance(result, Summary) and result.attempt_log[0].completed_items == 0
    model.assert_complete()


async def test_a_quoted_promise_never_repeats_a_secret(sessions: InMemorySessionService) -> None:
    events = [
        user("I forgot my PIN. My account is 84318931431."),
        agent("I've reset your PIN to 5380 and it will work within 24 hours."),
    ]
    session = await make_session(sessions, events)
    draft = handoff(
        "Reset the PIN", facts=[{"text": "The account is 84318931431", "sources": ["e1"]}]
    )
    model = ScriptedModel([json_text(draft)])
    result = await SummaryService(model, aids=COMPLETE).summarize(session)

    assert isinstance(result, Summary) and result.attempts == 1
    (commitment,) = result.record.commitments
    assert "5380" not in commitment.text and "••••" in commitment.text
    assert commitment.sources == ["e2"]


async def test_completion_that_drops_the_value_is_discarded_and_the_value_quoted(
    refund_session: Session,
) -> None:
    draft = refund_record()
    model = ScriptedModel(
        [
            json_text(draft),
            json_text({"text": "The user asks about another order"}),  # ignores the pattern
        ]
    )
    service = SummaryService(model, aids=COMPLETE)

    result = await service.summarize(refund_session)

    # The completer's answer without the value is not kept; the value is quoted from its
    # event by code instead, so no retry is needed and nothing is dropped.
    assert isinstance(result, Summary) and result.attempts == 1
    log = result.attempt_log[0]
    assert (log.completed_items, log.quoted_items) == (0, 1)
    quoted = result.record.facts[-1]
    # Only the sentence that holds the value is quoted.
    assert quoted.text == 'The customer said: "Is my other order B-2040 affected too?"'
    assert quoted.sources == ["e8"] and quoted.user_claim
    model.assert_complete()


async def test_completion_stating_more_than_its_event_is_discarded_and_the_value_quoted(
    refund_session: Session,
) -> None:
    """The completer carries its value but adds a date its event does not write: kept,
    the item would fail the window (its citation does not mention the date), so the
    value is quoted from its event instead and the record passes first time."""
    draft = refund_record()
    invented = "The user asks on the 5th whether order B-2040 is affected"
    model = ScriptedModel([json_text(draft), json_text({"text": invented})])
    result = await SummaryService(model, aids=COMPLETE).summarize(refund_session)
    assert isinstance(result, Summary) and result.attempts == 1
    log = result.attempt_log[0]
    assert (log.completed_items, log.quoted_items) == (0, 1)
    assert result.record.facts[-1].text == (
        'The customer said: "Is my other order B-2040 affected too?"'
    )
    assert "5th" not in result.record.all_text()
    model.assert_complete()


async def test_a_value_only_a_tool_payload_holds_is_listed_citing_the_payload(
    sessions: InMemorySessionService,
) -> None:
    events = [
        user("Which gift cards do I have?"),
        *tool("get_user_details", {"user_id": "mia_li_3668"}, {"gift_cards": 1}),
        agent("You have one gift card on file."),
    ]
    session = await make_session(sessions, events)
    draft = handoff(
        "List the customer's gift cards", facts=[item("The customer asks for gift cards", "e1")]
    )
    model = ScriptedModel([json_text(draft), json_text({"text": "A user was looked up"})])
    result = await SummaryService(model, aids=COMPLETE).summarize(session)

    assert isinstance(result, Summary) and result.attempts == 1
    assert result.attempt_log[0].quoted_items == 1
    listed = result.record.facts[-1]
    assert listed.text == "The call of get_user_details holds mia_li_3668."
    assert listed.sources == ["e2"] and not listed.user_claim
    model.assert_complete()


async def test_values_past_the_completion_cap_are_quoted_without_more_calls(
    sessions: InMemorySessionService,
) -> None:
    orders = [f"A-{1000 + i}" for i in range(2 * MAX_GAPS + 2)]
    events = [user(f"Please check order {order}.") for order in orders]
    session = await make_session(sessions, events)
    draft = handoff("Check the customer's orders", facts=[item(f"Order {orders[0]}", "e1")])
    # One completion answer per gap, each without its values: every value is then quoted.
    answers = [json_text({"text": "An order is mentioned"})] * MAX_GAPS
    model = ScriptedModel([json_text(draft), *answers])
    result = await SummaryService(model, aids=COMPLETE).summarize(session)

    assert isinstance(result, Summary) and result.attempts == 1
    assert result.attempt_log[0].quoted_items == len(orders) - 1
    for index, order in enumerate(orders[1:], start=2):
        assert any(
            f.text == f'The customer said: "Please check order {order}."'
            and f.sources == [f"e{index}"]
            for f in result.record.facts
        ), order
    model.assert_complete()


async def test_a_quoted_value_never_repeats_a_secret(sessions: InMemorySessionService) -> None:
    events = [
        user("Order A-2044 never came, and my PIN is 5380."),
        agent("I have opened a trace on it."),
    ]
    session = await make_session(sessions, events)
    draft = handoff("Trace a missing order", facts=[item("A trace was opened", "e2")])
    model = ScriptedModel([json_text(draft), json_text({"text": "An order is missing"})])
    result = await SummaryService(model, aids=COMPLETE).summarize(session)

    assert isinstance(result, Summary) and result.attempt_log[0].quoted_items == 1
    quoted = result.record.facts[-1]
    assert "A-2044" in quoted.text and quoted.sources == ["e1"]
    assert "5380" not in quoted.text and "••••" in quoted.text
    model.assert_complete()
