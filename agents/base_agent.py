"""The agent tree: names, descriptions, parent pointers and lookup."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from functools import partial

from agents.callbacks import AgentCallback, CallbackContext, as_list, first_result
from agents.context import InvocationContext
from agents.errors import AgentTreeError
from agents.events import Event, Part


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
        before_agent_callback: AgentCallback | Sequence[AgentCallback] | None = None,
        after_agent_callback: AgentCallback | Sequence[AgentCallback] | None = None,
        examples: Sequence[str] = (),
    ) -> None:
        if not name.isidentifier() or name == "user":
            raise AgentTreeError(f"agent name {name!r} must be an identifier other than 'user'")
        self.name = name
        self.description = description
        self.examples: tuple[str, ...] = tuple(examples)
        """A few requests this agent handles, in a customer's words: what a model routing
        to it is shown beside its description (`agents.llm.routing_examples`)."""
        self.parent: BaseAgent | None = None
        self.sub_agents: list[BaseAgent] = list(sub_agents)
        self.before_agent_callback: list[AgentCallback] = as_list(before_agent_callback)
        self.after_agent_callback: list[AgentCallback] = as_list(after_agent_callback)
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
        """Run this agent within the invocation, yielding the events it produces.

        A before-agent callback (or plugin) that returns text answers in the agent's
        place; an after-agent one that returns text adds a final answer after it.
        """
        ctx = ctx.for_agent(self)
        hooked = bool(ctx.plugins or self.before_agent_callback or self.after_agent_callback)
        if hooked:
            text = await first_result(
                [partial(p.before_agent, self) for p in ctx.plugins],
                self.before_agent_callback,
                CallbackContext(ctx),
            )
            if text is not None:
                yield self._callback_event(ctx, text)
                return
        async for event in self._run_impl(ctx):
            yield event
        if hooked and not ctx.end_invocation:
            text = await first_result(
                [partial(p.after_agent, self) for p in ctx.plugins],
                self.after_agent_callback,
                CallbackContext(ctx),
            )
            if text is not None:
                yield self._callback_event(ctx, text)

    def _callback_event(self, ctx: InvocationContext, text: str) -> Event:
        return Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            branch=ctx.branch,
            parts=(Part(text=text),),
        )

    async def _run_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        raise NotImplementedError
        yield  # pragma: no cover

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
