"""Where a step's grounding comes from (`agents.llm.grounding`): the tree's knowledge
index, the customer's latest question, what the conversation states, and the sections an
agent's own search calls returned."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agents.base_agent import BaseAgent
from agents.context import InvocationContext
from agents.events import Event
from agents.knowledge.relevance import mentioning, question_keys, relevant
from agents.knowledge.search import KnowledgeHit, KnowledgeSearch
from agents.tools.agent_tool import AgentTool
from agents.tools.knowledge_search import KnowledgeSearchTool


def tree_index(root: BaseAgent) -> KnowledgeSearch | None:
    """The knowledge index some agent of the tree under `root` searches (through its own
    tools or an agent it consults as a tool), None when the tree has none."""
    for agent in root.walk():
        for tool in getattr(agent, "tools", ()):
            if isinstance(tool, KnowledgeSearchTool):
                return tool.search
            if isinstance(tool, AgentTool):
                found = tree_index(tool.agent)
                if found is not None:
                    return found
    return None


def latest_question(events: Sequence[Event]) -> str:
    """The customer's latest message (in an AgentTool's session, the request it got)."""
    return next((e.text for e in reversed(events) if e.author == "user" and e.text), "")


FOLLOW_UP_TURNS = 2
"""The customer's messages before the latest one that a follow-up is read with."""


async def relevant_sections(
    search: Callable[[str], Awaitable[Sequence[KnowledgeHit]]],
    question: str,
    events: Sequence[Event],
) -> tuple[list[KnowledgeHit], str]:
    """The sections relevant to `question` (`agents.knowledge.relevance`), and the query
    they were found for. When none is, and the customer wrote before in this session, the
    question may be a follow-up ("And if I downgrade later?" after a question about
    upgrading a plan): it is searched for again together with the customer's earlier
    messages (`FOLLOW_UP_TURNS`, as conversational search does), and a section found that
    way counts only if it also holds one of the latest message's own topic words."""
    found = relevant(await search(question), question)
    asked = [e.text for e in events if e.author == "user" and e.text and not e.partial]
    earlier = asked[-(FOLLOW_UP_TURNS + 1) : -1]
    if found or not asked or asked[-1] != question or not question_keys(" ".join(earlier)):
        return found, question  # nothing earlier to read it with (a greeting is nothing)
    query = " ".join([*earlier, question])
    kept = mentioning(relevant(await search(query), query), question)
    return (kept, query) if kept else ([], question)


def conversation_texts(events: Sequence[Event]) -> list[str]:
    """What the conversation states: every message and tool result so far."""
    texts: list[str] = []
    for event in events:
        if event.partial:
            continue
        if event.text:
            texts.append(event.text)
        if event.actions.compaction is not None:
            texts.append(event.actions.compaction.summary)
        texts.extend(json.dumps(r.response, ensure_ascii=False) for r in event.function_responses)
    return texts


def returned_sections(
    ctx: InvocationContext, tool_name: str, agent: str
) -> list[KnowledgeHit] | None:
    """The sections this agent's `tool_name` calls returned this invocation (None when it
    made none)."""
    found: list[KnowledgeHit] | None = None
    for event in ctx.session.events:
        if event.invocation_id != ctx.invocation_id or event.author != agent:
            continue
        for result in event.function_responses:
            if result.name != tool_name:
                continue
            found = found or []
            for section in result.response.get("sections") or []:
                if isinstance(section, dict) and section.get("id") not in {h.id for h in found}:
                    found.append(_hit(section))
    return found


def _hit(section: dict[str, Any]) -> KnowledgeHit:
    return KnowledgeHit(
        id=str(section.get("id", "")),
        doc_id=str(section.get("id", "")).split("#", 1)[0],
        collection=str(section.get("collection") or ""),
        title=str(section.get("title") or ""),
        heading=str(section.get("heading") or ""),
        url=section.get("url") or None,
        text=str(section.get("text") or ""),
        score=0.0,
    )
