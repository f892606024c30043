"""The knowledge search tool: declared per agent in the tree, searching a real SQLite
knowledge index, its sections returned to the model with what a citation needs."""

from __future__ import annotations

import pytest

from agents.errors import AgentTreeError
from agents.llm.agent import LlmAgent
from agents.models.scripted import ScriptedModel, call
from agents.tools.knowledge_search import KnowledgeSearchTool
from agents.tree import TreeSpec
from storage import Database
from tests.agents.conversation import Conversation


def _tree(knowledge: object) -> dict[str, object]:
    return {
        "root": "billing_agent",
        "agents": {"billing_agent": {"instruction": "Answer billing.", "knowledge": knowledge}},
    }


async def test_knowledge_tool_offered_only_where_declared(db: Database) -> None:
    root = TreeSpec(_tree(["billing", "policies"])).build(knowledge=db.knowledge)
    assert isinstance(root, LlmAgent)
    [tool] = root.tools
    assert isinstance(tool, KnowledgeSearchTool)
    assert tool.collections == ("billing", "policies")
    bare = TreeSpec(_tree(["billing"])).build()
    assert isinstance(bare, LlmAgent) and bare.tools == []
    with pytest.raises(AgentTreeError, match="knowledge must list collections"):
        TreeSpec(_tree("billing")).build(knowledge=db.knowledge)


async def test_knowledge_tool_returns_cited_sections_of_its_collections(db: Database) -> None:
    root = TreeSpec(_tree(["policies"])).build(knowledge=db.knowledge)
    model = ScriptedModel(
        [call("search_knowledge", query="refund a duplicate charge"), "Refunded in full."]
    )
    turn = await Conversation(root, model).send("I was charged twice")
    author, (kind, name, response) = turn[1]
    assert (author, kind, name) == ("billing_agent", "response", "search_knowledge")
    first = response["sections"][0]
    assert {k: first[k] for k in ("id", "title", "heading", "url")} == {
        "id": "policies/refund-policy#duplicate-charges",
        "title": "Refund policy (sample)",
        "heading": "Duplicate charges",
        "url": "https://help.example.com/policies/refunds",
    }
    assert "refunded in full" in first["text"]
    assert all(s["id"].startswith("policies/") for s in response["sections"])
    assert turn[-1] == ("billing_agent", "Refunded in full.")
    model.assert_complete()
