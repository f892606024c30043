"""Output budgets: every agent call has a cap, tool-like agents a tighter one; an answer
cut at its cap is counted and shown, never waited out (issue 16)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import LlmAgent
from agents.metrics import REGISTRY
from agents.models.scripted import ScriptedModel
from agents.tree import build_support_tree
from tests.agents.conversation import Conversation
from tests.agents.test_decision import choose, support_tree, write_tree


async def test_an_answer_cut_at_its_budget_is_counted_and_shown() -> None:
    from agents.models.base import LlmResponse

    before = REGISTRY.get("support_bot_output_cut_total", agent="support_supervisor")
    cut = LlmResponse.from_text("Hello! Our opening hours are", finish_reason="length")
    model = ScriptedModel(
        [choose("support_supervisor"), cut, choose("support_supervisor")], decide_first=True
    )
    turn = await Conversation(support_tree(), model).send("hours?")
    assert turn == [("support_supervisor", "Hello! Our opening hours are")]
    assert REGISTRY.get("support_bot_output_cut_total", agent="support_supervisor") == before + 1


def test_the_tree_caps_every_agent_and_tool_agents_tighter(tmp_path: Path) -> None:
    from agents.tree import OutputBudget

    root = build_support_tree()
    caps: dict[str, Any] = {
        a.name: a.generate_config.max_tokens for a in root.walk() if isinstance(a, LlmAgent)
    }
    assert caps == {
        "support_supervisor": 400,
        "billing_agent": 400,
        "diagnose": 400,
        "fix_writer": 400,
    }
    policy = root.tools[0].agent  # type: ignore[attr-defined]
    assert policy.generate_config.max_tokens == 120
    path = write_tree(tmp_path / "tree.yaml")
    path.write_text(
        path.read_text().replace(
            "    instruction: Find the cause.",
            "    instruction: Find it.\n    generate_config: {max_tokens: 50}",
        )
    )
    small = build_support_tree(path=path, output_budget=OutputBudget(agent=200, tool_agent=60))
    assert small.find_agent("triage").generate_config.max_tokens == 50  # type: ignore[union-attr]
    assert small.generate_config.max_tokens == 200  # type: ignore[attr-defined]
    assert small.tools[0].agent.generate_config.max_tokens == 60  # type: ignore[attr-defined]
