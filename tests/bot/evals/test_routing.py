"""The routing evaluation on a decide-first model: per-route lines, decision time,
pretend actions caught and shown, and the route-only mode."""

from __future__ import annotations

import json
from pathlib import Path

from agents.llm.routing_examples import NearExample
from agents.models.base import LlmRequest
from agents.models.profile import ModelProfile
from agents.models.scripted import ScriptedModel, json_text
from agents.tree import build_support_tree
from bot.evals.routing import (
    CaseResult,
    RouteMap,
    RoutingCase,
    RoutingReport,
    case_line,
    evaluate_routing,
    load_cases,
    promises_refund,
    split_half,
)
from tests.agents.test_decision_scoring import scored

MESSAGES = [
    ("billing", "I was charged twice for INV-2291."),
    ("tech_support", "The desktop app crashes when I open the settings page."),
    ("other", "hello there"),
]


def write_dev_set(path: Path) -> Path:
    """Lines in the routing_dev.jsonl format: one user event each."""
    rows = [
        {
            "id": f"test-{route}-{i}",
            "source": "test",
            "flow": route,
            "events": [
                {"id": "e1", "author": "user", "text": text, "tool_call": None, "tool_result": None}
            ],
            "expected_entities": [],
            "expected_route": route,
            "expected_routes": [route],
            "meta": {},
        }
        for i, (route, text) in enumerate(MESSAGES)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def classify(request: LlmRequest) -> str:
    """The supervisor's decision by the message's words, the way a good model would."""
    message = request.contents[-1].text.lower()
    choice = "support_supervisor"
    if "charged" in message:
        choice = "billing_agent"
    elif "crashes" in message:
        choice = "tech_support"
    return json_text(choice)


async def test_routing_eval_on_a_decide_first_model(tmp_path: Path) -> None:
    cases = list(load_cases(write_dev_set(tmp_path / "dev.jsonl")))
    assert [c.expected_route for c in cases] == ["billing", "tech_support", "other"]
    model = ScriptedModel(
        [
            classify,
            json_text("billing_agent"),  # billing_agent answers without the policy tool,
            "The duplicate charge will be refunded.",
            json_text("yes"),  # but the consult check holds the refund promise back
            json_text({"request": "Refund a duplicate charge on INV-2291?"}),
            "ALLOWED: duplicate charges are refunded.",
            json_text("billing_agent"),  # decides again, the policy in view: keeps it
            "The duplicate charge will be refunded.",
            classify,
            "A permissions problem.",  # diagnose
            "1. Reinstall.",  # fix_writer
            classify,
            "I will transfer you to billing_agent.",  # pretends, becomes a transfer
            json_text("billing_agent"),
            "Billing here: what can I do?",
            json_text("no"),  # the consult check sends it
        ],
        decide_first=True,
    )
    report = await evaluate_routing(
        cases, tree=lambda: build_support_tree(model=model), routes=RouteMap()
    )
    model.assert_complete()
    lines = report.lines()
    assert lines[0] == "routing accuracy: 66.7% (2 of 3)"
    assert lines[1:4] == [
        "  billing_agent: 100.0% (1 of 1)",
        "  support_supervisor: 0.0% (0 of 1)",
        "  tech_support: 100.0% (1 of 1)",
    ]
    assert lines[-3].startswith("seconds per routing decision: median ")
    assert lines[-3].endswith("(3 decisions)")
    assert lines[-2] == "pretend-action replies shown to the user: 0 (caught and replaced: 1)"
    assert lines[-1] == (
        "replies promising a refund: 1, with the policy tool consulted first: 1 "
        "(policy tool consulted in 1 of 3 cases)"
    )


async def test_route_only_stops_at_the_supervisors_transfer(tmp_path: Path) -> None:
    cases = list(load_cases(write_dev_set(tmp_path / "dev.jsonl")))
    model = ScriptedModel(
        [classify, classify, classify, "Hello! How can I help?", json_text("support_supervisor")],
        decide_first=True,
    )
    report = await evaluate_routing(
        cases, tree=lambda: build_support_tree(model=model), routes=RouteMap(), route_only=True
    )
    model.assert_complete()  # no specialist was asked to write a reply
    assert report.accuracy == 1.0


def test_refund_promises_are_told_from_refund_talk() -> None:
    assert promises_refund("You will receive a refund of 49.00 USD within 5 days.")
    assert promises_refund("The duplicate charge will be refunded.")
    assert not promises_refund("Refunds take 5 days once approved; what is the invoice number?")


def test_a_case_line_shows_a_pretend_reply_that_reached_the_user() -> None:
    from bot.evals.routing import CaseResult, RoutingCase, case_line

    case = RoutingCase("c1", "getting money back", "billing")
    shown = CaseResult(
        "billing_agent",
        "billing_agent",
        2.0,
        pretend_shown=True,
        reply="Please contact\n tech support.",
    )
    assert case_line(case, shown).splitlines() == [
        "ok  billing_agent -> billing_agent   2.0s PRETEND  c1: getting money back",
        "      shown: Please contact tech support.",
    ]
    assert "shown:" not in case_line(case, CaseResult("billing_agent", "billing_agent", 2.0))


def test_the_halves_are_fixed_by_id_and_both_used() -> None:
    ids = [f"dev-{i}" for i in range(40)]
    halves = [split_half(i) for i in ids]
    assert halves == [split_half(i) for i in ids]  # the same from run to run
    assert set(halves) == {"look", "measure"}


def test_the_report_has_a_confusion_table_per_source() -> None:
    report = RoutingReport(
        [
            CaseResult("billing_agent", "billing_agent", source="one"),
            CaseResult("tech_support", "billing_agent", source="one"),
            CaseResult("tech_support", "tech_support", source="two"),
        ]
    )
    lines = report.lines()
    assert lines[0] == "routing accuracy: 66.7% (2 of 3)"
    assert "source one: 50.0% (1 of 2)" in lines
    assert "source two: 100.0% (1 of 1)" in lines
    start = lines.index("source one: 50.0% (1 of 2)")
    assert lines[start + 4].split() == [
        "expected",
        "\\",
        "answered",
        "billing_agent",
        "total",
        "accuracy",
    ]


async def test_a_miss_shows_the_closest_examples(tmp_path: Path) -> None:
    cases = [RoutingCase("c1", "The app crashes after the update", "tech_support", "test")]
    model = ScriptedModel([json_text("billing_agent")], decide_first=True)
    report = await evaluate_routing(
        cases, tree=lambda: build_support_tree(model=model), routes=RouteMap(), route_only=True
    )
    (result,) = report.results
    assert result.answered == "billing_agent" and result.source == "test"
    assert result.closest and result.closest[0].agent == "tech_support"
    line = case_line(cases[0], result)
    assert f'closest examples: tech_support "{result.closest[0].example}"' in line
    hit = CaseResult("tech_support", "tech_support", closest=(NearExample("a", "b", 1.0),))
    assert "closest" not in case_line(cases[0], hit)


async def test_the_report_counts_the_decisions_the_examples_vote_changed() -> None:
    """The model leans a little to answering a double charge itself; billing's description
    and examples hold the message's words, so the vote sends it to billing, and the report
    says so beside what the model alone would have scored."""
    cases = [RoutingCase("c1", "You took money twice for my invoice", "billing", "test")]
    leaning = {"support": -0.8, "billing": -1.1, "tech": -2.5, "policy": -4.0}
    model = ScriptedModel(
        [scored("support_supervisor", leaning)],
        profile=ModelProfile(native_tools=False, decide_first=True, choice_scoring="logprobs"),
    )
    report = await evaluate_routing(
        cases, tree=lambda: build_support_tree(model=model), routes=RouteMap(), route_only=True
    )
    model.assert_complete()
    (result,) = report.results
    assert (result.answered, result.unvoted) == ("billing_agent", "support_supervisor")
    assert report.vote_line() == (
        "decisions the examples' vote changed: 1 (1 to the expected agent, 0 away from it); "
        "the model alone: 0.0% (0 of 1)"
    )
    assert "the examples' vote overruled the model's support_supervisor" in case_line(
        cases[0], result
    )
