"""The agent hand-offs of one invocation as a streamed message's task timeline.

Each transfer ("support_supervisor → billing_agent"), each tool or AgentTool call
("billing_agent consulted policy_checker", then its result) and each step of a
workflow agent (an author taking over without a transfer, "diagnose", "fix_writer")
becomes a `task_update` chunk for `chat.appendStream`, in the order the events came,
each naming its agent. A title names only agents and tools the running tree has
(`tree_names`): a name the model made up shows as a neutral "<agent> is working…", and
every title is escaped, so nothing the model wrote reaches a title verbatim. Pure:
events in, chunk dicts out.
"""

from __future__ import annotations

import functools
from typing import Any

from agents.base_agent import BaseAgent
from agents.events import Event
from agents.llm.agent import LlmAgent
from agents.llm.transfer import TRANSFER_TOOL
from bot.slack.render.mrkdwn import escape

Chunk = dict[str, Any]

# Slack's limits on a task chunk's text (titles are shown on one line).
_TITLE_CHARS = 256


@functools.cache
def workflow_steps(root: BaseAgent) -> frozenset[str]:
    """The agents that run as steps of a workflow agent (a sequential, loop or parallel
    parent), whose turns show as steps. A tree is built once, so this is worked out once."""
    return frozenset(
        agent.name
        for agent in root.walk()
        if agent.parent is not None and not isinstance(agent.parent, LlmAgent)
    )


@functools.cache
def tree_names(root: BaseAgent) -> frozenset[str]:
    """Every agent and tool name in the tree under `root`: the only names a task title
    may show. A tree is built once, so this is worked out once."""
    names = {agent.name for agent in root.walk()}
    for agent in root.walk():
        if isinstance(agent, LlmAgent):
            names.update(tool.name for tool in agent.tools)
    return frozenset(names)


def task(task_id: str, title: str, status: str) -> Chunk:
    """One `task_update` chunk; `status` is pending, in_progress, complete or error."""
    return {
        "type": "task_update",
        "id": task_id,
        "title": escape(title)[:_TITLE_CHARS],
        "status": status,
    }


class Timeline:
    """Follows an invocation's events and says which tasks to show or update; `steps`
    are the agents whose turns are workflow steps (`workflow_steps`), `names` the agent
    and tool names a title may show (`tree_names`)."""

    def __init__(
        self, steps: frozenset[str] = frozenset(), names: frozenset[str] = frozenset()
    ) -> None:
        self._steps = steps
        self._names = names
        self._author: str | None = None
        self._open: dict[str, str] = {}  # task id -> title, still in progress
        self._count = 0

    def observe(self, event: Event) -> list[Chunk]:
        """The task chunks `event` adds or updates, in order (often none)."""
        chunks: list[Chunk] = []
        if event.author == "user":
            return chunks
        if event.author != self._author and event.author in self._steps:
            chunks += self._close_steps()
            chunks.append(self._start(f"step-{event.author}", event.author))
        self._author = event.author
        if event.partial:
            return chunks
        for call in event.function_calls:
            if call.name != TRANSFER_TOOL:
                title = self._titled(event.author, f"consulted {call.name}", call.name)
                chunks.append(self._start(call.id, title))
        for result in event.function_responses:
            if result.id in self._open:
                failed = "error" in result.response
                chunks.append(self._end(result.id, "error" if failed else "complete"))
        target = event.actions.transfer_to_agent
        if target:
            self._count += 1
            title = self._titled(event.author, f"→ {target}", target)
            chunks.append(task(f"transfer-{self._count}", title, "complete"))
        return chunks

    def close(self, *, failed: bool = False) -> list[Chunk]:
        """Updates that end every task still in progress, when the invocation ends."""
        status = "error" if failed else "complete"
        return [self._end(task_id, status) for task_id in list(self._open)]

    def _titled(self, author: str, action: str, named: str) -> str:
        """`author action` when the tree knows both `author` and the `named` agent or
        tool; otherwise a neutral title that repeats nothing unknown."""
        who = author if author in self._names else "An agent"
        return f"{who} {action}" if who == author and named in self._names else f"{who} is working…"

    def _start(self, task_id: str, title: str) -> Chunk:
        self._open[task_id] = title
        return task(task_id, title, "in_progress")

    def _end(self, task_id: str, status: str) -> Chunk:
        return task(task_id, self._open.pop(task_id), status)

    def _close_steps(self) -> list[Chunk]:
        return [self._end(t, "complete") for t in list(self._open) if t.startswith("step-")]
