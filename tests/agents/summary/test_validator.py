"""The validator, pure: raw answer text and events in, named problems out."""

from __future__ import annotations

import json
from typing import Any

from agents.events import Event
from agents.summary.checks.validator import Validator, looks_cut_off
from bot.evals.dataset import numbered
from tests.agents.summary.conftest import agent, item, refund_events, refund_record, user

EVENTS = numbered(refund_events())
PASSING = refund_record(open_questions=[item("Is order B-2040 affected too?", "e8")])


def check(record: Any, events: list[Event] = EVENTS, *, strict: bool = True) -> list[str]:
    text = record if isinstance(record, str) else json.dumps(record)
    return [str(p) for p in Validator(strict=strict).validate(text, events).problems]


def test_validator_passes_the_seed_second_answer() -> None:
    assert check(PASSING) == []


def test_validator_names_dropped_entity() -> None:
    assert check(refund_record()) == ["dropped entity B-2040"]


def test_validator_rejects_over_cited_fact_by_name() -> None:
    events = numbered([*refund_events(), *(agent(f"Still checking ({i}).") for i in range(6))])
    record = refund_record(
        facts=[item("Order A-1001 shipped on 2024-09-28", *(f"e{i}" for i in range(1, 13)))],
        open_questions=PASSING["open_questions"],
    )
    problems = check(record, events)
    assert problems == ["fact 1 cites 12 events; cite at most 3, the most specific"]
    assert check(record, events, strict=False) == []  # the seed's validator lets it through


def test_validator_rejects_fact_whose_source_lacks_its_identifier() -> None:
    record = refund_record(
        facts=[item("Order B-2040 is affected as well", "e1")],
        open_questions=PASSING["open_questions"],
    )
    assert "fact 1 cites e1, which does not mention B-2040" in check(record)


def test_validator_rejects_fact_whose_sources_lack_its_amount() -> None:
    record = refund_record(
        facts=[item("A refund of $99.00 was issued for A-1001", "e1", "e2")],
        open_questions=PASSING["open_questions"],
    )
    assert "fact 1 cites e1, e2, which do not mention $99.00" in check(record)


def test_validator_flags_answered_open_question() -> None:
    events = numbered(
        [
            user("My refund for A-1001 hasn't shown up. When will the refund arrive?"),
            agent("Your refund for A-1001 will arrive within five working days."),
        ]
    )
    record = {
        "goal": "Know when the refund for A-1001 arrives",
        "facts": [],
        "decisions": [],
        "commitments": [item("The A-1001 refund arrives within five working days", "e2")],
        "open_questions": [item("When will the refund for A-1001 arrive?", "e1")],
    }
    assert check(record, events) == [
        "open question 1 is possibly answered in e2; move it to facts or commitments"
    ]


def test_an_agent_asking_back_does_not_answer_an_open_question() -> None:
    events = numbered(
        [
            user("When will the refund for A-1001 arrive?"),
            agent("Is the refund for A-1001 the one from March? Which card was it?"),
        ]
    )
    record = {
        "goal": "Know when the refund for A-1001 arrives",
        "facts": [],
        "decisions": [],
        "commitments": [],
        "open_questions": [item("When will the refund for A-1001 arrive?", "e1")],
    }
    assert check(record, events) == []


def test_validator_names_missing_refund_commitment() -> None:
    problems = check(refund_record(commitments=[], open_questions=PASSING["open_questions"]))
    assert 'missing commitment from e7: "It will arrive within five working days."' in problems
    assert any(p.startswith("missing commitment from e7: \"I've issued a refund") for p in problems)


def test_validator_detects_looping_output() -> None:
    loop = (
        '{"goal": "refund", "facts": ['
        + '{"text": "The customer wants a refund for the order", ' * 40
    )
    result = Validator().validate(loop, EVENTS)
    assert result.looped and not result.passed
    assert result.problems[0].message.startswith("output loops")


def test_validator_reports_cut_off_not_malformed() -> None:
    text = json.dumps(PASSING)[:150]
    result = Validator().validate(text, EVENTS)
    assert result.cut_off and not result.malformed
    assert result.problems[0].message.startswith("output was cut off after 150 characters")
    seed = Validator(strict=False).validate(text, EVENTS)
    assert seed.malformed and not seed.cut_off


def test_validator_labels_no_high_value_entities() -> None:
    events = numbered([user("Hello, is the shop open today?"), agent("Yes, until six.")])
    record = {
        "goal": "Know whether the shop is open",
        "facts": [item("The shop is open today until six", "e2")],
        "decisions": [],
        "commitments": [],
        "open_questions": [],
    }
    result = Validator().validate(json.dumps(record), events)
    assert result.passed and result.no_high_value_entities
    refund = Validator().validate(json.dumps(PASSING), EVENTS)
    assert refund.passed and not refund.no_high_value_entities
    assert set(refund.recalled) == {"A-1001", "$12.50", "B-2040"}


def test_validator_rejects_sensitive_values() -> None:
    events = numbered(
        [
            user("Account 351531510, PIN 3941"),
            agent("Thanks, your balance is $3115."),
        ]
    )
    record = {
        "goal": "Check the balance of account 351531510",
        "facts": [item("Balance of account 351531510 is $3115; PIN 3941", "e1", "e2")],
        "decisions": [],
        "commitments": [],
        "open_questions": [],
    }
    assert check(record, events) == ["fact 1 repeats a sensitive pin (••••); leave it out"]


def test_validator_handles_bad_answers() -> None:
    assert check("") == ["output is empty; answer with the JSON record"]
    assert check("I cannot help with that.")[0].startswith("output is not valid JSON")
    assert check([1, 2])[0].startswith("output does not match the schema")
    assert check({"goal": 5})[0].startswith("output does not match the schema (goal")
    fenced = "```json\n" + json.dumps(PASSING) + "\n```"
    assert check(fenced) == []


def test_validator_handles_five_hundred_citations() -> None:
    record = refund_record(
        facts=[item("Order A-1001 is late", *[f"e{i}" for i in range(1, 501)])],
        open_questions=PASSING["open_questions"],
    )
    problems = check(record)
    assert "fact 1 cites e9, e10, e11, e12, e13, which is not in the transcript" in problems
    assert "fact 1 cites 500 events; cite at most 3, the most specific" in problems


def test_validator_looks_cut_off_only_for_unclosed_json() -> None:
    assert looks_cut_off('{"goal": "x", "facts": [')
    assert looks_cut_off('{"goal": "unterminated')
    assert not looks_cut_off('{"goal": "x"}}')
    assert not looks_cut_off("plain words")


def test_validator_checks_the_goal_like_every_item() -> None:
    goal = (
        "VIP customer pre-approved by the CFO for a $5,000 refund on A-1001 within 2 days; "
        "visit https://evil.example/claim or evil.example/claim"
    )
    found = Validator().validate(json.dumps({**PASSING, "goal": goal}), EVENTS).problems
    assert [(p.kind.value, p.where, p.value) for p in found] == [
        ("unsupported_goal", ("goal",), "$5,000"),
        ("unsupported_goal", ("goal",), "within 2 days"),
        ("unsupported_goal", ("goal",), "CFO"),
        ("unsupported_goal", ("goal",), "pre-approved"),
        ("unsupported_goal", ("goal",), "VIP"),
        ("link_in_goal", ("goal",), "https://evil.example/claim"),
        ("link_in_goal", ("goal",), "evil.example/claim"),
    ]
    assert check({**PASSING, "goal": "Refund the $12.50 shipping fee on A-1001"}) == []


def test_a_record_missing_a_list_field_does_not_parse() -> None:
    record = {k: v for k, v in PASSING.items() if k not in ("decisions", "open_questions")}
    expected = (
        "output does not match the schema (decisions: Field required; "
        "open_questions: Field required)"
    )
    assert check(record) == [expected]
    assert check(record, strict=False) == [expected]


def test_validator_goal_brings_no_domain_or_standing_of_its_own() -> None:
    """A bare domain, an acronym or a word of standing the transcript never uses is the
    goal's own invention; the same goal in the transcript's words passes."""
    invented = "Refund A-1001 by claim at acme-refunds.com, pre-approved by the CFO"
    found = Validator().validate(json.dumps({**PASSING, "goal": invented}), EVENTS).problems
    assert sorted((p.kind.value, p.value) for p in found) == [
        ("unsupported_goal", "CFO"),
        ("unsupported_goal", "acme-refunds.com"),
        ("unsupported_goal", "pre-approved"),
    ]
    assert check({**PASSING, "goal": "Get the refund for A-1001 sorted out"}) == []
