"""Typed problems: the retry prompt and the metrics key on `Problem.kind`, never on the
wording, and the validator only checks (it never changes what it is given)."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

from agents.events import Event
from agents.metrics import REGISTRY
from agents.models.scripted import ScriptedModel, json_text
from agents.sessions.session import Session
from agents.summary.aids.checklist import build_checklist
from agents.summary.checks.validator import ValidationResult, Validator
from agents.summary.entities import Entity, EntityExtractor
from agents.summary.metrics import count_attempt
from agents.summary.problems import Problem, ProblemKind
from agents.summary.retry import retry_message
from agents.summary.service import Summary, SummaryService
from agents.summary.transcript import RenderedTranscript, RenderOptions, render_transcript
from bot.evals.dataset import numbered
from tests.agents.summary.conftest import item, refund_events, refund_record

EVENTS = numbered(refund_events())
WHERE_B2040 = (
    'add an item citing e8 (user: "Is my other order B-2040 affected too?") that states it'
)


def _rendered() -> tuple[RenderedTranscript, list[Entity]]:
    entities = EntityExtractor().extract(EVENTS)
    return render_transcript(EVENTS, RenderOptions(), mask=entities), entities


def test_retry_hint_follows_the_kind_not_the_wording() -> None:
    rendered, entities = _rendered()
    plan = build_checklist(EVENTS, entities, visible=rendered.text)
    reworded = Problem(ProblemKind.DROPPED_ENTITY, ("e8",), "B-2040 went missing", "B-2040")
    lookalike = Problem(ProblemKind.MALFORMED, (), "dropped entity B-2040")

    message = retry_message(rendered, plan, [reworded, lookalike])

    assert f"- B-2040 went missing: {WHERE_B2040}" in message
    assert "- dropped entity B-2040\n" in message + "\n"  # no hint: not a dropped value


def test_a_retry_beyond_the_listed_problems_says_how_many_were_cut() -> None:
    rendered, entities = _rendered()
    plan = build_checklist(EVENTS, entities, visible=rendered.text)
    problems = [
        Problem(
            ProblemKind.UNKNOWN_SOURCE, (f"facts.{n}",), f"fact {n} cites e99, which does not exist"
        )
        for n in range(1, 36)
    ]
    message = retry_message(rendered, plan, problems)
    assert "- fact 30 cites e99" in message and "- fact 31 cites e99" not in message
    assert message.endswith("- ...and 5 more problem(s) not listed; fix those above first")


def test_metrics_count_the_kind_not_the_wording() -> None:
    count_attempt(
        [
            Problem(ProblemKind.OVER_CITED, ("facts.1",), "too many sources, friend"),
            Problem(ProblemKind.LOOP, (), "dropped entity B-2040 (a misleading sentence)"),
        ]
    )
    assert REGISTRY.get("support_bot_summary_problems_total", kind="over_cited") == 1
    assert REGISTRY.get("support_bot_summary_problems_total", kind="loop") == 1
    assert REGISTRY.get("support_bot_summary_problems_total", kind="dropped_entity") == 0
    assert REGISTRY.get("support_bot_summary_attempts_total", result="fail") == 1


class RewordingValidator(Validator):
    """The strict validator with every message reworded (kinds and values kept)."""

    def check(self, parsed: ValidationResult, events: list[Event], **kw: Any) -> ValidationResult:
        checked = super().check(parsed, events, **kw)
        reworded = [replace(p, message=f"problem #{i}") for i, p in enumerate(checked.problems)]
        return replace(checked, problems=reworded)


async def test_rewording_every_message_changes_neither_retry_nor_metrics(
    refund_session: Session,
) -> None:
    first = refund_record()  # drops B-2040
    second = refund_record(open_questions=[item("Is order B-2040 affected too?", "e8")])
    model = ScriptedModel([json_text(first), json_text(second)])

    result = await SummaryService(model, validator=RewordingValidator()).summarize(refund_session)

    assert isinstance(result, Summary) and result.attempts == 2
    assert [p.kind for p in result.problems_first_attempt] == [ProblemKind.DROPPED_ENTITY]
    assert f"- problem #0: {WHERE_B2040}" in model.requests[1].contents[-1].text
    assert REGISTRY.get("support_bot_summary_problems_total", kind="dropped_entity") == 1


def test_problems_say_where_they_are() -> None:
    record = refund_record(
        facts=[item("Order A-1001 is late", "e1", "e99")],
        open_questions=[item("Is order B-2040 affected too?", "e7")],
    )
    problems = Validator().validate(json.dumps(record), EVENTS).problems
    by_kind = {p.kind: p for p in problems}
    assert by_kind[ProblemKind.UNKNOWN_SOURCE].where == ("facts.1", "e99")
    assert by_kind[ProblemKind.IRRELEVANT_SOURCE].where == ("open_questions.1", "e7")
    assert by_kind[ProblemKind.IRRELEVANT_SOURCE].value == "B-2040"
    assert str(by_kind[ProblemKind.UNKNOWN_SOURCE]) == (
        "fact 1 cites e99, which is not in the transcript"
    )


def test_validator_never_changes_its_input() -> None:
    # An item citing the neighbouring turn: grounding would rewrite it, the validator
    # only names it; the secret-restating item would be dropped by grounding, not here.
    record = refund_record(
        facts=[item("Order A-1001 shipped on 2024-09-28", "e1"), item("The PIN is ••••.", "e1")],
        open_questions=[item("Is order B-2040 affected too?", "e7")],
    )
    validator = Validator()
    parsed = validator.parse(json.dumps(record))
    assert parsed.record is not None
    before_record = parsed.record.model_dump()
    before = copy.deepcopy(parsed)

    checked = validator.check(parsed, EVENTS)

    assert checked is not parsed and checked.problems
    assert parsed == before and parsed.record.model_dump() == before_record
    assert checked.record is parsed.record
    assert checked.record.open_questions[0].sources == ["e7"]
    assert len(checked.record.facts) == 2
