"""Announced work that never happens, and decisions read by log-probabilities.

Whole conversations on a scripted decide-first model. The announcement texts are the
embedded model's kind ("I will proceed to review the case", issue 16); the scored
decisions carry the top alternatives a llama.cpp server returns with `top_logprobs`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents import LlmAgent
from agents.llm.decide_first.choice_scores import (
    PRIORS,
    TOP_LOGPROBS,
    calibrated,
    option_scores,
    pick,
)
from agents.models.base import GenerateConfig, LlmRequest, LlmResponse, TokenLogprobs
from agents.models.openai_format import from_openai_response, to_openai_params
from agents.models.profile import ModelProfile
from agents.models.scripted import ScriptedModel, json_text
from agents.tree import build_support_tree
from tests.agents.conversation import Conversation
from tests.agents.test_decision import decision_enum, support_tree, write_tree

ANNOUNCED = [
    "I will proceed to review the case and get back to you shortly.",
    "Let me check that for you.",
    "I'll look into this right away.",
    "Please wait while I verify your account details.",
]


@pytest.mark.parametrize("announcement", ANNOUNCED)
async def test_announced_work_is_asked_again_then_answered_in_a_reply_field(
    announcement: str,
) -> None:
    """The supervisor decided to answer itself (a shipment question is its own); its reply
    announces work, twice. Its decision stands: the reply is asked for as the one field
    of an object, and shown as the supervisor's."""
    reply = "Orders usually arrive within 3 to 5 working days of dispatch."
    model = ScriptedModel(
        [
            json_text("support_supervisor"),
            announcement,  # pretends to do work the turn never does
            "I'll investigate and follow up by e-mail.",  # asked again: still pretends
            json_text({"reply": reply}),
            json_text("no"),  # the consult check: no refund promised
        ],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send("When will my parcel arrive?")
    assert turn == [("support_supervisor", reply)]
    assert "cannot be sent" in model.requests[2].contents[-1].text
    assert model.requests[3].response_schema is not None
    assert model.requests[3].response_schema["title"] == "reply"
    model.assert_complete()


async def test_announced_work_in_every_reply_is_settled_by_a_decision() -> None:
    model = ScriptedModel(
        [
            json_text("support_supervisor"),
            "Let me check that for you.",
            "I'll investigate and follow up by e-mail.",  # asked again: still pretends
            json_text({"reply": "I'll look into it right away."}),  # the reply field too
            json_text("billing_agent"),  # settled by a decision among real actions
            json_text("billing_agent"),  # billing_agent keeps the request
            "Your invoice INV-2291 shows one 49.00 USD charge.",
        ],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send("Is my invoice right?")
    shown = [text for _, text in turn if isinstance(text, str)]
    assert shown == ["Your invoice INV-2291 shows one 49.00 USD charge."]
    assert turn[0] == (
        "support_supervisor",
        ("call", "transfer_to_agent", {"agent_name": "billing_agent"}),
    )
    assert decision_enum(model.requests[4]) == ["billing_agent", "tech_support", "policy_checker"]
    model.assert_complete()


async def test_an_announcement_with_nothing_to_act_on_is_cut_out() -> None:
    leaf = LlmAgent(name="solo", instruction="Answer.")
    model = ScriptedModel(
        [
            "Let me check that for you.",
            "Restart the app, then sign in again. I'll look into it further if that fails.",
        ],
        decide_first=True,
    )
    assert await Conversation(leaf, model).send("help") == [
        ("solo", "Restart the app, then sign in again.")
    ]
    model.assert_complete()


def scored(name: str, alternatives: dict[str, float]) -> LlmResponse:
    """A decision answer as a llama.cpp server gives it: the JSON string, and per token
    the top alternatives the model weighed before the grammar held it to the enum."""
    first = name.split("_")[0]
    return LlmResponse.from_text(
        json_text(name),
        logprobs=(
            TokenLogprobs(token='"', top=alternatives),
            TokenLogprobs(token=first, top=alternatives),
            TokenLogprobs(token=name[len(first) :], top={name[len(first) :]: 0.0}),
            TokenLogprobs(token='"', top={'"': 0.0}),
        ),
    )


def test_option_scores_count_every_token_that_starts_a_name() -> None:
    names = ["billing_agent", "tech_support", "support_supervisor"]
    top = {"bill": -1.2, "billing": -1.2, "support": -0.9, '"': -3.0, "other": -4.0}
    scores = option_scores([TokenLogprobs(token="support", top=top)], names)
    assert scores is not None
    assert scores["billing_agent"] == pytest.approx(-1.2 + 0.6931, abs=1e-3)  # 2 tokens
    assert scores["support_supervisor"] == -0.9
    assert scores["tech_support"] == -4.0  # not among the alternatives: the least listed
    assert pick(scores, "support_supervisor") == "billing_agent"
    # The prior is subtracted; a tie goes to the greedy answer.
    even = {"billing_agent": scores["billing_agent"] + 0.9}
    assert pick(calibrated(scores, even), "support_supervisor") == "support_supervisor"
    assert option_scores([], names) is None


def test_logprobs_are_asked_for_and_read_back_over_the_openai_format() -> None:
    params = to_openai_params(LlmRequest(config=GenerateConfig(top_logprobs=TOP_LOGPROBS)))
    assert params["logprobs"] is True
    assert params["top_logprobs"] == TOP_LOGPROBS
    response = from_openai_response(
        {
            "choices": [
                {
                    "message": {"role": "assistant", "content": '"tech_support"'},
                    "finish_reason": "stop",
                    "logprobs": {
                        "content": [
                            {
                                "token": '"',
                                "logprob": 0.0,
                                "top_logprobs": [{"token": "tech", "logprob": -0.2}],
                            }
                        ]
                    },
                }
            ]
        }
    )
    assert response.logprobs == (TokenLogprobs(token='"', top={"tech": -0.2}),)


async def test_calibrated_scoring_removes_the_lean_towards_one_option(tmp_path: Path) -> None:
    """A tree from YAML with other names. The model leans to `accounts` for any input (the
    content-free prior); for this message `repairs` rose most, and wins although the
    greedy answer was `accounts`. The prior is asked once and kept for the next turn."""
    PRIORS.clear()
    lean = {"accounts": -0.3, "repairs": -3.0, "front": -1.5, "rules": -4.0}
    message = {"accounts": -0.6, "repairs": -1.0, "front": -2.5, "rules": -4.5}
    model = ScriptedModel(
        [
            scored("accounts", message),  # the decision: greedy says accounts
            scored("front_desk", lean),  # the calibration: "N/A" as the message
            "Found the cause.",  # repairs' pipeline (triage)
            scored("accounts", message),  # the next turn: the prior is kept, no call
            "Found it again.",
        ],
        decide_first=True,
    )
    model.profile = ModelProfile(native_tools=False, decide_first=True, choice_scoring="calibrated")
    root = build_support_tree(path=write_tree(tmp_path / "tree.yaml"), model=model)
    turn = await Conversation(root, model).send("The app crashes when I open it.")
    assert turn[0] == ("front_desk", ("call", "transfer_to_agent", {"agent_name": "repairs"}))
    assert turn[-1] == ("triage", "Found the cause.")
    decision, prior = model.requests[0], model.requests[1]
    assert decision.config.top_logprobs == TOP_LOGPROBS
    assert "N/A" in prior.contents[0].text
    assert prior.system_instruction == decision.system_instruction
    second = await Conversation(root, model).send("It crashes again.")
    assert second[-1] == ("triage", "Found it again.")
    model.assert_complete()


async def test_greedy_scoring_asks_for_no_logprobs() -> None:
    model = ScriptedModel(
        [json_text("tech_support"), json_text("tech_support"), "Reinstall the app."],
        decide_first=True,
    )
    await Conversation(support_tree(), model).send("It crashes.")
    assert model.requests[0].config.top_logprobs is None
    model.assert_complete()
