"""`KnowledgeSearchTool`: search the team's own documents, in the collections an agent
may read (`knowledge: [...]` in the tree), through the `KnowledgeSearch` protocol.

The result holds the best few sections with what a reply needs to cite them (id, title,
heading, URL) and their text, fenced as data by the runtime like any tool result. The
sections found are also kept in the invocation's `temp:` state under `SOURCES_KEY`, so a
plugin can record them with the reply that used them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.context import ToolContext
from agents.knowledge.search import KnowledgeSearch
from agents.models.base import ToolDeclaration
from agents.tools.base_tool import BaseTool, ToolError

SOURCES_KEY = "temp:knowledge_sources"
DEFAULT_LIMIT = 3


class KnowledgeSearchTool(BaseTool):
    """Searches `collections` of a knowledge index for the model's query."""

    name = "search_knowledge"

    def __init__(
        self, search: KnowledgeSearch, collections: Sequence[str], *, limit: int = DEFAULT_LIMIT
    ) -> None:
        self.search = search
        self.collections = tuple(collections)
        self.limit = limit
        self.description = (
            "Search the support team's documents ("
            + ", ".join(self.collections)
            + ") and return the best sections. Answer only from what they say."
        )

    def declaration(self) -> ToolDeclaration:
        return ToolDeclaration(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what to look for, in words"}
                },
                "required": ["query"],
            },
        )

    async def run(self, *, args: dict[str, Any], tool_context: ToolContext) -> dict[str, Any]:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError(f"{self.name} needs a non-empty 'query' string")
        hits = await self.search.search(query, collections=self.collections, limit=self.limit)
        sources = list(tool_context.state.get(SOURCES_KEY) or [])
        known = {source["id"] for source in sources}
        sources.extend(h.source() for h in hits if h.id not in known)
        tool_context.state[SOURCES_KEY] = sources
        return {
            "sections": [{**hit.source(), "text": hit.text} for hit in hits],
            "found": len(hits),
        }
