"""SequentialAgent: run each child once, in order."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agents.base_agent import BaseAgent
from agents.context import InvocationContext
from agents.events import Event


class SequentialAgent(BaseAgent):
    """Runs its children one after another in the same branch; state joins the steps."""

    async def _run_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        for child in self.sub_agents:
            async for event in child.run_async(ctx):
                yield event
            if ctx.end_invocation:
                return
