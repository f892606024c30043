"""Small agent trees driven by scripted models, for end-to-end tests."""

from __future__ import annotations

from agents.llm.agent import LlmAgent
from agents.models.scripted import ScriptedModel


def support_tree(model: ScriptedModel) -> LlmAgent:
    """`support_supervisor` with a `billing_agent` it can transfer to."""
    billing = LlmAgent(
        name="billing_agent",
        description="Invoices, refunds and charges.",
        instruction="Resolve billing questions.",
        model=model,
        disallow_transfer_to_peers=True,
    )
    return LlmAgent(
        name="support_supervisor",
        description="Front door.",
        instruction="Route the user.",
        model=model,
        sub_agents=[billing],
    )
