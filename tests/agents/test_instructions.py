"""Instruction templating from state, and what output_key captures."""

from __future__ import annotations

import pytest

from agents import InstructionTemplateError, LlmAgent
from agents.llm.instructions import inject_state
from agents.models.scripted import ScriptedModel, transfer
from tests.agents.conversation import Conversation


def test_instructions_fill_required_and_optional_keys() -> None:
    state = {"tier": "pro", "user:name": "Ana"}
    text = 'Tier {tier}, name {user:name}, note {note?}. JSON stays: {"a": 1}'
    assert (
        inject_state(text, state, agent_name="a")
        == 'Tier pro, name Ana, note . JSON stays: {"a": 1}'
    )


def test_instructions_missing_required_key_names_the_key() -> None:
    with pytest.raises(InstructionTemplateError, match="'tier'") as info:
        inject_state("Tier {tier}", {}, agent_name="billing_agent")
    assert "billing_agent" in str(info.value)


async def test_instructions_missing_key_ends_invocation_with_clear_event() -> None:
    agent = LlmAgent(name="billing_agent", instruction="Tier {account_tier}")
    events = await Conversation(agent, ScriptedModel()).send_events("hi")
    assert events[-1].error_code == "instruction_template"
    assert "account_tier" in (events[-1].error_message or "")


async def test_the_shipped_billing_agent_reads_an_optional_account_tier_or_none() -> None:
    """`{account_tier?}` in the shipped tree: filled when state has it, empty (never an
    error) when it does not."""
    from agents.tree import build_support_tree

    for state, expected in (
        ({"account_tier": "pro"}, "for a pro customer"),
        ({}, "for a  customer"),
    ):
        model = ScriptedModel([transfer("billing_agent"), "Which charge?"])
        conversation = Conversation(build_support_tree(model=model), model, state=state)
        turn = await conversation.send("I was charged twice")
        assert turn[-1] == ("billing_agent", "Which charge?")
        billing = [r for r in model.requests if r.agent_name == "billing_agent"][-1]
        assert expected in billing.system_instruction


async def test_output_key_stores_own_final_text_only() -> None:
    billing = LlmAgent(name="billing_agent", description="Billing.")
    root = LlmAgent(name="root", output_key="root_answer", sub_agents=[billing])
    model = ScriptedModel([transfer("billing_agent"), "Billing's answer."])
    conversation = Conversation(root, model)
    await conversation.send("refund")
    assert "root_answer" not in await conversation.state()

    model.add("Root's own answer.")
    billing.disallow_transfer_to_parent = True  # next message goes to root
    await conversation.send("something else")
    assert (await conversation.state())["root_answer"] == "Root's own answer."
