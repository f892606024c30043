"""How settings configure the runner: the agent tree file and a hosted model's timeout."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from agents.models.litellm_model import LiteLlmModel
from agents.sessions.service import InMemorySessionService
from agents.summary.windows import InMemoryWindowStore
from bot.config import Settings
from bot.models import configured_models, model_factory
from bot.wiring import build_runner

TREE = """
root: front_desk
agents:
  front_desk:
    type: llm
    description: Greets people and routes them.
    instruction: Route each request.
    sub_agents: [refunds]
  refunds:
    type: llm
    description: Handles refunds.
    instruction: Handle refunds.
"""


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_agent_tree_file_replaces_the_default_tree(tmp_path: Path) -> None:
    tree = tmp_path / "tree.yaml"
    tree.write_text(TREE)
    config = settings(model="openai/gpt-4o-mini", agent_tree_file=tree)
    db = SimpleNamespace(
        sessions=InMemorySessionService(),
        windows=InMemoryWindowStore(),
        summary_runs=None,
        knowledge=None,
    )
    runner = build_runner(config, db, configured_models(config))
    assert runner.agent.name == "front_desk"
    assert [a.name for a in runner.agent.sub_agents] == ["refunds"]


def test_default_tree_without_agent_tree_file() -> None:
    config = settings(model="openai/gpt-4o-mini")
    db = SimpleNamespace(
        sessions=InMemorySessionService(),
        windows=InMemoryWindowStore(),
        summary_runs=None,
        knowledge=None,
    )
    assert build_runner(config, db, configured_models(config)).agent.name == "support_supervisor"


def test_model_timeout_setting_reaches_hosted_models() -> None:
    model = model_factory(settings(model="openai/gpt-4o-mini", model_timeout_seconds=7.5))(
        "openai/gpt-4o-mini"
    )
    assert isinstance(model, LiteLlmModel)
    assert model.timeout == 7.5
    default = model_factory(settings(model="openai/gpt-4o-mini"))("openai/gpt-4o-mini")
    assert isinstance(default, LiteLlmModel) and default.timeout == 60.0


async def test_shipped_tree_agents_search_their_collections(sqlite_url: str) -> None:
    from agents.tools.knowledge_search import KnowledgeSearchTool
    from storage import Database

    config = settings(model="openai/gpt-4o-mini")
    db = await Database.open(sqlite_url)
    try:
        root = build_runner(config, db, configured_models(config)).agent
        searched = {
            agent.name: tool.collections
            for agent in root.walk()
            for tool in getattr(agent, "tools", [])
            if isinstance(tool, KnowledgeSearchTool)
        }
        # policy_checker is consulted as a tool: its own instance sits under each caller.
        for agent in root.walk():
            for tool in getattr(agent, "tools", []):
                child = getattr(tool, "agent", None)
                for inner in getattr(child, "tools", []):
                    if isinstance(inner, KnowledgeSearchTool):
                        searched[child.name] = inner.collections
        assert searched == {
            "billing_agent": ("billing", "policies"),
            "diagnose": ("tech", "accounts"),
            "fix_writer": ("tech", "accounts"),
            "policy_checker": ("policies",),
        }
    finally:
        await db.close()
