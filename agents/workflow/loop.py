"""LoopAgent: repeat the children until `max_iterations` or an escalation."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence

from agents.base_agent import BaseAgent
from agents.context import InvocationContext
from agents.errors import AgentTreeError
from agents.events import Event, EventActions, LoopExit, LoopExitReason


class LoopAgent(BaseAgent):
    """Runs its children in order, repeatedly.

    It stops after `max_iterations` rounds, or after the child that produced an event
    carrying `escalate` finishes. `max_iterations` is required: every loop is bounded.
    Its last event carries `actions.loop_exit`: why it stopped, after how many rounds.
    Its children do not stream: any round's text may be replaced by the next round's.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        sub_agents: Sequence[BaseAgent] = (),
        max_iterations: int,
    ) -> None:
        if max_iterations < 1:
            raise AgentTreeError(f"loop {name!r} needs max_iterations >= 1")
        super().__init__(name=name, description=description, sub_agents=sub_agents)
        self.max_iterations = max_iterations

    async def _run_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        reason: LoopExitReason = "max_iterations"
        iteration = 0
        quiet = dataclasses.replace(ctx, streaming=False)
        while iteration < self.max_iterations and reason == "max_iterations":
            iteration += 1
            for child in self.sub_agents:
                escalated = False
                async for event in child.run_async(quiet):
                    escalated = escalated or event.actions.escalate
                    yield event
                if escalated or ctx.end_invocation:
                    reason = "escalated" if escalated else "invocation_ended"
                    break
        # An empty event that only records why the loop stopped: models never see it.
        yield Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            branch=ctx.branch,
            actions=EventActions(loop_exit=LoopExit(reason=reason, iterations=iteration)),
        )
