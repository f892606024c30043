"""What the panel says about agents, built from the tree's names and descriptions.

Nothing here names a particular agent: the suggested prompts, the thread title and the
loading status come from whatever tree the bot runs (`AGENT_TREE_FILE`), so a team's own
tree gets its own panel without code.
"""

from __future__ import annotations

import re

from agents.base_agent import BaseAgent

# Slack shows up to four suggested prompts in a panel thread.
MAX_PROMPTS = 4
PROMPT_TITLE_CHARS = 60
_CLAUSE_END = re.compile(r"[:;.]\s")


def headline(description: str) -> str:
    """A description's opening clause (up to its first colon, semicolon or full stop)."""
    text = " ".join(description.split()).rstrip(".")
    return _CLAUSE_END.split(text + " ", maxsplit=1)[0].strip()


def _lowered(text: str) -> str:
    # "Invoices" reads "invoices" mid-sentence; "API errors" keeps its capitals.
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


def _shortened(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def suggested_prompts(root: BaseAgent) -> list[dict[str, str]]:
    """One prompt per specialist (the root's sub-agents, each a transfer target), from
    its description: the title is the opening clause, the message asks about it."""
    prompts = []
    for agent in root.sub_agents:
        clause = headline(agent.description)
        if not clause:
            continue
        prompts.append(
            {
                "title": _shortened(clause, PROMPT_TITLE_CHARS),
                "message": f"I have a question about {_lowered(clause)}.",
            }
        )
    return prompts[:MAX_PROMPTS]


def thread_title(root: BaseAgent) -> str:
    """A new panel thread's title: the agent that answers first."""
    return f"Conversation with {root.name}"


def agent_descriptions(root: BaseAgent) -> dict[str, str]:
    """Every agent the tree may run, by name: its own agents and those it consults
    through AgentTool (separate instances, outside the tree)."""
    found: dict[str, str] = {}
    pending = [root]
    while pending:
        agent = pending.pop()
        if agent.name in found:
            continue
        found[agent.name] = agent.description
        pending.extend(agent.sub_agents)
        for tool in getattr(agent, "tools", ()):
            consulted = getattr(tool, "agent", None)
            if isinstance(consulted, BaseAgent):
                pending.append(consulted)
    return found


def working_status(name: str, description: str) -> tuple[str, list[str]]:
    """The loading status while `name` works, and the lines Slack rotates through."""
    status = f"{name} is checking your request…"
    lines = [status]
    clause = headline(description)
    if clause:
        lines.append(f"{name} handles {_lowered(_shortened(clause, PROMPT_TITLE_CHARS))}…")
    return status, lines


def consulting_status(caller: str, consulted: str) -> tuple[str, list[str]]:
    """The loading status while `caller` consults `consulted` (an AgentTool call)."""
    status = f"{caller} is consulting {consulted}…"
    return status, [status]
