"""Decisions laid out as function signatures, and two layouts read together.

Whole conversations on a scripted decide-first model. The scored answers carry the top
alternatives a llama.cpp server returns with `top_logprobs`, token by token, as the
embedded model writes them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.llm.decide_first.choice_scores import TOP_LOGPROBS, option_scores
from agents.llm.decide_first.function_layout import ANSWER_FUNCTION, function_names
from agents.models.base import LlmRequest, LlmResponse, TokenLogprobs
from agents.models.litellm_model import LiteLlmModel
from agents.models.profile import ModelProfile
from agents.models.scripted import ScriptedModel, json_text
from agents.tree import build_support_tree
from bot.config import Settings
from bot.local_model.server import LocalEndpoint
from bot.models import configured_models
from tests.agents.conversation import Conversation
from tests.agents.test_decision import support_tree, write_tree
from tests.agents.test_decision_scoring import scored

BOTH = ("question", "functions")


def called(name: str, alternatives: dict[str, float] | None = None) -> LlmResponse:
    """A functions-layout answer, `{"name": "<name>"}`, as the server writes it: the key's
    tokens, then the name's first token with the alternatives the model weighed there."""
    first = name.split("_")[0]
    tokens = [
        TokenLogprobs(token='{"', top={'{"': 0.0}),
        TokenLogprobs(token="name", top={"name": 0.0}),
        TokenLogprobs(token='":', top={'":': 0.0}),
        TokenLogprobs(token=' "', top={' "': 0.0}),
        TokenLogprobs(token=first, top=alternatives or {first: 0.0}),
        TokenLogprobs(token=name[len(first) :], top={name[len(first) :]: 0.0}),
        TokenLogprobs(token='"}', top={'"}': 0.0}),
    ]
    text = json.dumps({"name": name})
    return LlmResponse.from_text(text, logprobs=tuple(tokens) if alternatives else ())


def function_enum(request: LlmRequest) -> list[str]:
    assert request.response_schema is not None
    assert request.response_schema["required"] == ["name"]
    return list(request.response_schema["properties"]["name"]["enum"])


def laid_out(model: ScriptedModel, layouts: tuple[str, ...]) -> ScriptedModel:
    model.profile = ModelProfile(**{**model.profile.model_dump(), "decision_layouts": layouts})
    return model


async def test_functions_layout_allows_exactly_answer_the_targets_and_the_tool() -> None:
    """Asked as function signatures, the supervisor's options are the same four: the
    answer is a function of its own; the conversation comes as chat turns."""
    model = laid_out(
        ScriptedModel(
            [called(ANSWER_FUNCTION), "Hello! How can I help?", json_text("support_supervisor")],
            decide_first=True,
        ),
        ("functions",),
    )
    turn = await Conversation(support_tree(), model).send("hi")
    assert turn == [("support_supervisor", "Hello! How can I help?")]
    decision = model.requests[0]
    assert function_enum(decision) == [
        "billing_agent",
        "tech_support",
        ANSWER_FUNCTION,  # the supervisor answering itself
        "policy_checker",
    ]
    assert decision.tools == [] and decision.config.max_tokens is not None
    system = decision.system_instruction
    assert system.startswith("Transfer billing to billing_agent.")  # the instruction first
    signatures = [json.loads(line) for line in system.splitlines() if line.startswith('{"type"')]
    described = {s["function"]["name"]: s["function"]["description"] for s in signatures}
    assert list(described) == function_enum(decision)
    assert "Invoices and refunds." in described["billing_agent"]
    assert "Errors and crashes." in described["tech_support"]
    assert "Greetings and general questions." in described[ANSWER_FUNCTION]
    assert described["policy_checker"] == "Says whether a refund is allowed."
    assert [(c.role, c.text) for c in decision.contents] == [("user", "hi")]
    model.assert_complete()


@pytest.mark.parametrize(
    ("target", "reply"),
    [("billing_agent", "One 49.00 USD charge on INV-2291."), ("tech_support", "Clear the cache.")],
)
async def test_a_function_choice_is_the_ordinary_transfer(target: str, reply: str) -> None:
    model = laid_out(
        ScriptedModel([called(target), called(ANSWER_FUNCTION), reply], decide_first=True),
        ("functions",),
    )
    turn = await Conversation(support_tree(), model).send("help")
    assert turn[0] == ("support_supervisor", ("call", "transfer_to_agent", {"agent_name": target}))
    assert turn[-1] == (target, reply)
    model.assert_complete()


async def test_two_layouts_are_read_together_and_the_surer_one_wins() -> None:
    """The question layout leans to billing, barely; the functions layout is sure it is
    tech support. Added as log-probabilities, tech support wins, and the transfer is the
    ordinary transfer event."""
    question = {"billing": -0.60, "tech": -0.90, "support": -3.0, "policy": -4.0}
    functions = {"tech": -0.05, "billing": -3.5, "answer": -4.0, "policy": -5.0}
    model = laid_out(
        ScriptedModel(
            [
                scored("billing_agent", question),
                called("tech_support", functions),
                json_text("tech_support"),  # it keeps the request: no log-probabilities
                "Reinstall the app.",
            ],
            decide_first=True,
        ),
        BOTH,
    )
    turn = await Conversation(support_tree(), model).send("The app crashes on start.")
    assert turn == [
        ("support_supervisor", ("call", "transfer_to_agent", {"agent_name": "tech_support"})),
        (
            "support_supervisor",
            ("response", "transfer_to_agent", {"result": "transferred to tech_support"}),
        ),
        ("tech_support", "Reinstall the app."),
    ]
    first, second = model.requests[:2]
    # Both are read by log-probabilities, though the scoring setting is greedy.
    assert first.config.top_logprobs == TOP_LOGPROBS == second.config.top_logprobs
    assert first.response_schema is not None and first.response_schema["type"] == "string"
    assert function_enum(second)[:2] == ["billing_agent", "tech_support"]
    model.assert_complete()


async def test_layouts_that_agree_keep_the_agents_own_answer() -> None:
    question = {"support": -0.2, "billing": -2.0, "tech": -2.5, "policy": -4.0}
    functions = {"answer": -0.3, "billing": -1.8, "tech": -2.9, "policy": -3.0}
    model = laid_out(
        ScriptedModel(
            [
                scored("support_supervisor", question),
                called(ANSWER_FUNCTION, functions),
                "We deliver to Canada in 5 to 7 days.",
                json_text("no"),  # the consult check: no refund promised
            ],
            decide_first=True,
        ),
        BOTH,
    )
    turn = await Conversation(support_tree(), model).send("Do you deliver to Canada?")
    assert turn == [("support_supervisor", "We deliver to Canada in 5 to 7 days.")]
    model.assert_complete()


async def test_without_logprobs_the_question_layouts_answer_stands_in_one_call() -> None:
    """A server that returns no log-probabilities cannot be read together: the first
    layout's constrained answer is the decision, and the second layout is not asked."""
    model = laid_out(
        ScriptedModel(
            [json_text("billing_agent"), json_text("billing_agent"), "One charge of 49.00 USD."],
            decide_first=True,
        ),
        BOTH,
    )
    turn = await Conversation(support_tree(), model).send("Was I charged twice?")
    assert turn[-1] == ("billing_agent", "One charge of 49.00 USD.")
    model.assert_complete()


async def test_a_tree_from_yaml_with_other_names_routes_the_same_way_in_both_layouts(
    tmp_path: Path,
) -> None:
    model = laid_out(
        ScriptedModel(
            [
                scored("front_desk", {"front": -0.7, "repairs": -0.8, "accounts": -3.0}),
                called("repairs", {"repairs": -0.1, "answer": -2.5, "accounts": -4.0}),
                "Found the cause.",
            ],
            decide_first=True,
        ),
        BOTH,
    )
    root = build_support_tree(path=write_tree(tmp_path / "tree.yaml"), model=model)
    turn = await Conversation(root, model).send("It crashes.")
    assert turn[0] == ("front_desk", ("call", "transfer_to_agent", {"agent_name": "repairs"}))
    assert turn[-1] == ("triage", "Found the cause.")
    assert function_enum(model.requests[1]) == [
        "accounts",
        "repairs",
        ANSWER_FUNCTION,
        "rules_checker",
    ]
    model.assert_complete()


def test_option_scores_of_an_object_answer_are_read_at_its_name() -> None:
    answer = called("tech_support", {"tech": -0.2, "billing": -1.9, "name": -0.1})
    names = ["billing_agent", "tech_support"]
    scores = option_scores(answer.logprobs, names, key="name")
    assert scores == pytest.approx({"billing_agent": -1.9, "tech_support": -0.2})
    # Without the key, the first token that is not a quote is the object's brace, where
    # no alternative starts a name: every option gets the floor, nothing is read.
    assert option_scores(answer.logprobs, names) == {"billing_agent": 0.0, "tech_support": 0.0}


def test_an_agent_named_like_the_answer_function_keeps_its_own_name() -> None:
    from agents.llm.decide_first.choices import Choice

    choices = [Choice(ANSWER_FUNCTION, "transfer", "x"), Choice("front", "answer", "y")]
    assert function_names(choices) == [ANSWER_FUNCTION, ANSWER_FUNCTION + "_"]


def test_the_embedded_model_reads_both_layouts_and_a_hosted_model_the_question() -> None:
    endpoint = LocalEndpoint(model="openai/qwen", api_base="http://127.0.0.1:1/v1")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    local = configured_models(settings, endpoint).main
    assert isinstance(local, LiteLlmModel) and local.profile.decision_layouts == BOTH
    hosted = configured_models(Settings(_env_file=None, model="gpt-4o-mini")).factory(  # type: ignore[call-arg]
        "gpt-4o-mini"
    )
    assert isinstance(hosted, LiteLlmModel) and hosted.profile.decision_layouts == ("question",)
    chosen = Settings(_env_file=None, decision_layouts="functions")  # type: ignore[call-arg]
    assert chosen.decision_layouts == ("functions",)
    only = configured_models(chosen, endpoint).main
    assert isinstance(only, LiteLlmModel) and only.profile.decision_layouts == ("functions",)


def test_an_unknown_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="layout"):
        Settings(_env_file=None, decision_layouts="question,vibes")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="layouts"):
        LiteLlmModel("openai/x", decision_layouts=("vibes",))  # type: ignore[arg-type]
