"""The completion pass: one small, value-constrained call per checklist line a draft missed."""

from __future__ import annotations

import json

from agents.models.scripted import ScriptedModel, json_text
from agents.sessions.service import InMemorySessionService
from agents.sessions.session import Session
from agents.summary.aids.policy import SmallModelAids
from agents.summary.service import Summary, SummaryService
from tests.agents.summary.conftest import agent, handoff, make_session, refund_record, user

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


async def test_completion_that_drops_the_value_is_discarded(refund_session: Session) -> None:
    draft = refund_record()
    fixed = refund_record(open_questions=[{"text": "Is B-2040 affected?", "sources": ["e8"]}])
    model = ScriptedModel(
        [
            json_text(draft),
            json_text({"text": "The user asks about another order"}),  # ignores the pattern
            json_text(fixed),  # the retry, whose draft needs no completion
        ]
    )
    service = SummaryService(model, aids=COMPLETE)

    result = await service.summarize(refund_session)

    assert isinstance(result, Summary) and result.attempts == 2
    assert [str(p) for p in result.problems_first_attempt] == ["dropped entity B-2040"]
    assert result.attempt_log[0].completed_items == 0
    model.assert_complete()


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
