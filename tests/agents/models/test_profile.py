"""`ModelProfile`: checked when made, and the one thing an agent step reads of its model."""

from __future__ import annotations

import pydantic
import pytest

from agents import LlmAgent
from agents.models.litellm_model import LiteLlmModel
from agents.models.profile import DECIDE_FIRST, ModelProfile
from agents.models.scripted import ScriptedModel, json_text, transfer
from tests.agents.conversation import Conversation


def tree() -> LlmAgent:
    """A supervisor that may answer itself or transfer to billing."""
    billing = LlmAgent(name="billing_agent", description="Invoices and refunds.")
    return LlmAgent(
        name="support_supervisor",
        description="Greetings and general questions.",
        instruction="Transfer billing to billing_agent.",
        sub_agents=[billing],
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"decision_layouts": ("question", "vibes")},
        {"decision_layouts": ()},
        {"decision_layouts": ("question", "question")},
        {"choice_scoring": "vibes"},
        {"decide_frist": True},
    ],
)
def test_profile_refuses_unknown_or_empty_settings_when_made(fields: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        ModelProfile(**fields)  # type: ignore[arg-type]


def test_profile_is_frozen_and_an_adapter_checks_its_settings_when_built() -> None:
    with pytest.raises(pydantic.ValidationError):
        DECIDE_FIRST.decide_first = False  # type: ignore[misc]
    with pytest.raises(ValueError, match="choice_scoring"):
        LiteLlmModel("openai/x", choice_scoring="vibes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool decision"):
        LiteLlmModel("openai/x", decision="sometimes")  # type: ignore[arg-type]


def test_tool_decision_auto_decides_first_exactly_without_native_tools() -> None:
    auto = ModelProfile.for_tool_decision
    assert auto("auto", native_tools=False) == DECIDE_FIRST
    assert auto("auto", native_tools=True) == ModelProfile()
    assert auto("decide-first", native_tools=True).decide_first
    assert not auto("one-call", native_tools=False).decide_first
    assert LiteLlmModel("openai/x", tool_mode="prompted").profile == DECIDE_FIRST
    assert LiteLlmModel("openai/x").profile == ModelProfile()


async def test_a_decide_first_profile_decides_then_answers() -> None:
    model = ScriptedModel(
        [json_text("billing_agent"), json_text("billing_agent"), "Your refund is on its way."],
        profile=DECIDE_FIRST,
    )
    turn = await Conversation(tree(), model).send("Refund my order, please.")
    assert turn == [
        ("support_supervisor", ("call", "transfer_to_agent", {"agent_name": "billing_agent"})),
        (
            "support_supervisor",
            ("response", "transfer_to_agent", {"result": "transferred to billing_agent"}),
        ),
        ("billing_agent", "Your refund is on its way."),
    ]
    decision, handed, reply = model.requests
    assert decision.tools == [] and decision.response_schema is not None
    assert decision.response_schema["enum"] == ["billing_agent", "support_supervisor"]
    # The target may hand the request back to its sender, so it decides too.
    assert handed.response_schema is not None
    assert handed.response_schema["enum"] == ["support_supervisor", "billing_agent"]
    assert reply.agent_name == "billing_agent"
    model.assert_complete()


async def test_the_same_tree_on_a_native_tools_profile_makes_one_call_per_step() -> None:
    model = ScriptedModel(
        [transfer("billing_agent"), "Your refund is on its way."], profile=ModelProfile()
    )
    turn = await Conversation(tree(), model).send("Refund my order, please.")
    assert turn == [
        ("support_supervisor", ("call", "transfer_to_agent", {"agent_name": "billing_agent"})),
        (
            "support_supervisor",
            ("response", "transfer_to_agent", {"result": "transferred to billing_agent"}),
        ),
        ("billing_agent", "Your refund is on its way."),
    ]
    supervisor, billing = model.requests
    assert supervisor.tool_names() == ["transfer_to_agent"] and supervisor.response_schema is None
    assert billing.agent_name == "billing_agent"
    model.assert_complete()


def test_scripted_decide_first_is_short_for_the_decide_first_profile() -> None:
    assert ScriptedModel(decide_first=True).profile == DECIDE_FIRST
    assert ScriptedModel().profile == ModelProfile()
    with pytest.raises(ValueError, match="not both"):
        ScriptedModel(decide_first=True, profile=DECIDE_FIRST)
