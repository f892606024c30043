"""ParallelAgent: run the children concurrently, each on its own branch."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

from agents.base_agent import BaseAgent
from agents.context import InvocationContext
from agents.errors import AgentTreeError
from agents.events import Event
from agents.llm.agent import LlmAgent

_DONE = object()


class ParallelAgent(BaseAgent):
    """Runs all children at once.

    Each child runs on branch `<branch>.<child>` and so does not see its siblings'
    events; all share session state. Two children that store their answers under the
    same `output_key` would race (the last writer winning in silence), so building such
    a tree raises `AgentTreeError` naming the key. A child waits until its event has
    been persisted before it goes on, so its next step sees its own history.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        writers: dict[str, tuple[str, str]] = {}  # key -> (branch child, writing agent)
        for child in self.sub_agents:
            for key, agent in _output_keys(child):
                branch, other = writers.setdefault(key, (child.name, agent))
                if branch != child.name:
                    raise AgentTreeError(
                        f"parallel agent {self.name!r}: {other!r} and {agent!r} both write "
                        f"output_key {key!r}; concurrent branches need their own keys"
                    )

    async def _run_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        queue: asyncio.Queue[tuple[object, asyncio.Future[None] | None]] = asyncio.Queue()
        base = ctx.branch or self.name

        async def run_child(child: BaseAgent) -> None:
            try:
                # Concurrent branches do not stream: their deltas would interleave.
                branch = ctx.for_agent(child, branch=f"{base}.{child.name}")
                async for event in child.run_async(dataclasses.replace(branch, streaming=False)):
                    resumed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                    await queue.put((event, resumed))
                    await resumed
            except BaseException as exc:  # delivered to the consumer, which re-raises
                await queue.put((exc, None))
            finally:
                await queue.put((_DONE, None))

        tasks = [asyncio.create_task(run_child(child)) for child in self.sub_agents]
        pending = len(tasks)
        try:
            while pending:
                item, resumed = await queue.get()
                if item is _DONE:
                    pending -= 1
                    continue
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, Event)
                yield item
                if resumed is not None:
                    resumed.set_result(None)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def _output_keys(agent: BaseAgent) -> list[tuple[str, str]]:
    """`(output_key, agent name)` of every LLM agent in `agent`'s subtree that has one."""
    return [
        (a.output_key, a.name) for a in agent.walk() if isinstance(a, LlmAgent) and a.output_key
    ]
