"""Agent transfer: how an LlmAgent is told of its targets and hands the conversation over
(which targets it has is `LlmAgent.transfer_targets`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.llm.routing_examples import described
from agents.models.base import ToolDeclaration

if TYPE_CHECKING:
    from agents.base_agent import BaseAgent

TRANSFER_TOOL = "transfer_to_agent"


def transfer_declaration(targets: list[BaseAgent]) -> ToolDeclaration:
    """`transfer_to_agent(agent_name)` with `agent_name` limited to exactly `targets`."""
    return ToolDeclaration(
        name=TRANSFER_TOOL,
        description="Hand the conversation to another agent, which then answers the user.",
        parameters={
            "type": "object",
            "properties": {
                "agent_name": {
                    "type": "string",
                    "enum": [t.name for t in targets],
                    "description": "The agent to transfer to.",
                }
            },
            "required": ["agent_name"],
        },
    )


def transfer_instruction(parent: BaseAgent | None, targets: list[BaseAgent]) -> str:
    """The text that tells the model whom it may transfer to, by their descriptions;
    `parent` is the agent's parent (named when it is one of the targets)."""
    lines = ["You can transfer the conversation to these agents:"]
    for target in targets:
        lines.append(f"- {target.name}: {described(target)}")
    lines.append(
        "If you are the best agent for the request according to your description, answer it "
        f"yourself. If another agent is better, call `{TRANSFER_TOOL}` with its name and write "
        "nothing else."
    )
    if parent is not None and parent in targets:
        lines.append(
            f"Your parent agent is {parent.name}. If neither you nor the other agents fit the "
            "request, transfer to your parent agent."
        )
    return "\n".join(lines)
