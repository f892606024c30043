"""The agent tree: names, descriptions, parent pointers and lookup."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from agents.context import InvocationContext
from agents.errors import AgentTreeError
from agents.events import Event


class BaseAgent:
    """A node of the agent tree.

    Building an agent sets each child's parent. A child can have only one parent, and
    names are unique within a tree, because names are addresses: they are the author
    of every event and the target of every transfer.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        sub_agents: Sequence[BaseAgent] = (),
    ) -> None:
        if not name.isidentifier() or name == "user":
            raise AgentTreeError(f"agent name {name!r} must be an identifier other than 'user'")
        self.name = name
        self.description = description
        self.parent: BaseAgent | None = None
        self.sub_agents: list[BaseAgent] = list(sub_agents)
        for child in self.sub_agents:
            if child.parent is not None:
                raise AgentTreeError(
                    f"agent {child.name!r} already has parent {child.parent.name!r}; "
                    f"build a new instance for {name!r} (use a factory)"
                )
            child.parent = self
        self._check_unique_names()

    def _check_unique_names(self) -> None:
        seen: set[str] = set()
        for agent in self.walk():
            if agent.name in seen:
                raise AgentTreeError(f"duplicate agent name {agent.name!r} in one tree")
            seen.add(agent.name)

    def walk(self) -> list[BaseAgent]:
        """This agent and all its descendants, depth first."""
        found: list[BaseAgent] = [self]
        for child in self.sub_agents:
            found.extend(child.walk())
        return found

    @property
    def root_agent(self) -> BaseAgent:
        agent = self
        while agent.parent is not None:
            agent = agent.parent
        return agent

    def find_agent(self, name: str) -> BaseAgent | None:
        """This agent or a descendant with `name`."""
        for agent in self.walk():
            if agent.name == name:
                return agent
        return None

    async def run_async(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        """Run this agent within the invocation, yielding the events it produces."""
        async for event in self._run_impl(ctx.for_agent(self)):
            yield event

    async def _run_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        raise NotImplementedError
        yield  # pragma: no cover

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
