"""Evaluation over dataset rows: conversion to sessions, scoring, honest labels."""

from __future__ import annotations

import json
from pathlib import Path

from agents.models.scripted import ScriptedModel, json_text
from agents.sessions.service import InMemorySessionService
from agents.summary.checks.validator import Validator
from agents.summary.service import SummaryService
from bot.evals.dataset import conversation_from_row, load_conversations
from bot.evals.shadow import ShadowValidator
from bot.evals.summaries import conversation_session, evaluate, outcome_line, select_every_nth
from tests.agents.summary.conftest import handoff

ROWS = [
    {
        "id": "c1",
        "source": "test",
        "events": [
            {"id": "e1", "author": "user", "text": "Cancel reservation JG7FMM please."},
            {
                "id": "e2",
                "author": "tool",
                "text": "cancel_reservation(...)",
                "tool_call": {"name": "cancel_reservation", "args": {"reservation_id": "JG7FMM"}},
                "tool_result": {"status": "cancelled", "refund": 120},
            },
            {"id": "e3", "author": "agent", "text": "Done: JG7FMM is cancelled."},
        ],
        "expected_entities": [
            {
                "type": "reservation_id",
                "value": "JG7FMM",
                "surfaces": ["JG7FMM"],
                "event_ids": ["e1"],
                "sensitive": False,
            },
        ],
    },
    {
        "id": "c2",
        "source": "test",
        "events": [
            {"id": "e1", "author": "user", "text": "What's the weather in Paris?"},
            {"id": "e2", "author": "agent", "text": "Sunny and mild in Paris."},
        ],
        "expected_entities": [],
    },
]


def test_eval_conversation_becomes_session_with_call_and_response() -> None:
    conversation = conversation_from_row(ROWS[0])
    assert [e.author for e in conversation.events] == [
        "user",
        "support_agent",
        "support_agent",
        "support_agent",
    ]
    call = conversation.events[1].function_calls[0]
    response = conversation.events[2].function_responses[0]
    assert call.name == "cancel_reservation" and response.id == call.id
    assert response.response == {"status": "cancelled", "refund": 120}


def test_eval_loads_jsonl_and_selects_every_nth(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(dict(ROWS[0], id=f"c{i}")) for i in range(10)))
    conversations = list(load_conversations(path))
    assert [c.id for c in select_every_nth(conversations, 5)] == ["c0", "c2", "c4", "c6", "c8"]


async def test_eval_reports_recall_and_labels_empty_transcripts_separately() -> None:
    good = handoff(
        "Cancel reservation JG7FMM",
        facts=[{"text": "Reservation JG7FMM is cancelled", "sources": ["e3", "e4"]}],
    )
    weather = handoff(
        "Know the weather in Paris",
        facts=[{"text": "Paris weather is sunny and mild", "sources": ["e2"]}],
    )
    model = ScriptedModel([json_text(good), json_text(weather)])
    seen: list[tuple[int, int]] = []

    report = await evaluate(
        [conversation_from_row(r) for r in ROWS],
        SummaryService(model),
        progress=lambda done, total: seen.append((done, total)),
    )

    assert seen == [(1, 2), (2, 2)]
    assert report.first_attempt_pass_rate == 1.0 and report.fallback_rate == 0.0
    assert report.entity_recall == 1.0
    assert report.recalled_all == 1 and report.passed_without_entities == 1
    assert report.citation_validity == 1.0
    assert report.mean_sources_per_item == 1.5
    lines = "\n".join(report.lines())
    assert "no high-value entities to recall: 1" in lines


async def test_eval_seed_validator_runs_side_by_side() -> None:
    over = handoff(
        "Cancel reservation JG7FMM",
        facts=[{"text": "JG7FMM cancelled", "sources": ["e1", "e2", "e3", "e4"]}],
    )
    conversations = [conversation_from_row(ROWS[0])]
    strict = await evaluate(conversations, SummaryService(ScriptedModel([json_text(over)] * 2)))
    seed = await evaluate(
        conversations,
        SummaryService(ScriptedModel([json_text(over)]), validator=Validator(strict=False)),
        label="seed",
    )
    assert strict.fallback_rate == 1.0
    assert seed.first_attempt_pass_rate == 1.0


async def test_eval_shadow_seed_validator_scores_the_same_first_answers() -> None:
    over = handoff(
        "Cancel reservation JG7FMM",
        facts=[{"text": "JG7FMM cancelled", "sources": ["e1", "e2", "e3", "e4"]}],
    )
    model = ScriptedModel([json_text(over)] * 2)
    shadow = ShadowValidator(Validator(), Validator(strict=False))
    service = SummaryService(model, validator=shadow)
    report = await evaluate([conversation_from_row(ROWS[0])], service)
    model.assert_complete()  # the shadow costs no model call
    assert report.first_attempt_pass_rate == 0.0
    (outcome,) = report.outcomes
    assert outcome.shadow_passed_first is True
    assert shadow.take() is None  # handed over once per summary
    lines = "\n".join(report.lines())
    assert "seed validator on the same first answers: pass 100.0% (1 of 1;" in lines
    assert "of those, rejected by this validator: 1" in lines


async def test_eval_session_ids_follow_append_order() -> None:
    session = await conversation_session(conversation_from_row(ROWS[0]), InMemorySessionService())
    assert [e.id for e in session.events] == ["e1", "e2", "e3", "e4"]


async def test_eval_line_can_show_first_attempt_problems() -> None:
    dropped = handoff(
        "Cancel a reservation", facts=[{"text": "The reservation is cancelled", "sources": ["e4"]}]
    )
    model = ScriptedModel([json_text(dropped), json_text(dropped)])
    report = await evaluate([conversation_from_row(ROWS[0])], SummaryService(model))

    outcome = report.outcomes[0]
    assert outcome_line(outcome).count("\n") == 0
    shown = outcome_line(outcome, problems=True).splitlines()
    assert shown[0].startswith(f"{outcome.conversation_id}: fallback attempts=2")
    assert "    dropped entity JG7FMM" in shown[1:]


async def test_eval_shadow_fails_a_first_answer_whose_model_call_failed() -> None:
    from agents.models.base import ModelError

    good = handoff(
        "Cancel reservation JG7FMM",
        facts=[{"text": "Reservation JG7FMM was cancelled", "sources": ["e4"]}],
    )
    model = ScriptedModel([ModelError("boom"), json_text(good)])
    service = SummaryService(model, validator=ShadowValidator(Validator(), Validator(strict=False)))
    report = await evaluate([conversation_from_row(ROWS[0])], service)
    (outcome,) = report.outcomes
    assert outcome.attempts == 2 and not outcome.passed_first
    assert outcome.shadow_passed_first is False  # not the retry's answer, scored instead


async def test_eval_lines_count_the_recited_and_the_unsupported_items() -> None:
    from agents.summary.aids.policy import SmallModelAids

    draft = handoff(
        "Cancel reservation JG7FMM",
        facts=[
            {"text": "Reservation JG7FMM was cancelled", "sources": ["e3"]},
            {"text": "The agent confirmed it is done", "sources": ["e1"]},
            {"text": "The weather is nice today", "sources": ["e1"]},
        ],
    )
    model = ScriptedModel([json_text(draft)])
    service = SummaryService(model, aids=SmallModelAids(ground_citations=True))
    report = await evaluate([conversation_from_row(ROWS[0])], service)
    model.assert_complete()  # repaired before validation: no retry
    (outcome,) = report.outcomes
    assert outcome.passed_first and (outcome.recited_items, outcome.unsupported_items) == (1, 1)
    assert "recited=1 unsupported=1 answered=0" in outcome_line(outcome)
    lines = "\n".join(report.lines())
    assert "items without values re-cited to the events that support them: 1;" in lines
    assert "dropped as supported by no event: 1;" in lines
