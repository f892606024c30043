"""SequentialAgent: run each child once, in order."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

from agents.base_agent import BaseAgent
from agents.context import InvocationContext
from agents.events import Event


class SequentialAgent(BaseAgent):
    """Runs its children one after another in the same branch; state joins the steps.
    Only the last child writes the pipeline's answer, so only it may stream: an earlier
    step's text (a diagnosis) is the next step's input, never shown as the reply."""

    async def _run_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        last = len(self.sub_agents) - 1
        quiet = dataclasses.replace(ctx, streaming=False)
        for n, child in enumerate(self.sub_agents):
            async for event in child.run_async(ctx if n == last else quiet):
                yield event
            if ctx.end_invocation:
                return
