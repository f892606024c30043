"""Drive one agent within an invocation, persisting each event as it is produced."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agents.base_agent import BaseAgent
from agents.callbacks import chain_events
from agents.context import InvocationContext
from agents.events import Event
from agents.invocation_log import log_event
from agents.metrics import REGISTRY
from agents.sessions.state import TEMP_PREFIX


async def run_and_persist(agent: BaseAgent, ctx: InvocationContext) -> AsyncIterator[Event]:
    """Run `agent` and append every event it yields before the agent goes on.

    `temp:` writes are kept on the invocation context (the session service never stores
    them), so later steps of the same invocation still read them. Plugins see (and may
    replace) each event before it is stored. A partial event (a streamed text delta) is
    passed on as it is, neither stored nor shown to the plugins.
    """
    async for event in agent.run_async(ctx):
        if event.partial:
            yield event
            continue
        for key, value in event.actions.state_delta.items():
            if key.startswith(TEMP_PREFIX):
                ctx.temp_state[key] = value
        yield await persist(ctx, event)


async def persist(ctx: InvocationContext, event: Event) -> Event:
    """Store one event of the invocation after the plugins' `on_event` hooks."""
    if ctx.plugins:
        event = await chain_events([p.on_event for p in ctx.plugins], ctx, event)
    stored = await ctx.session_service.append_event(ctx.session, event)
    record_event(ctx, stored)
    return stored


def record_event(ctx: InvocationContext, event: Event) -> None:
    """Count a stored event's hand-off and note it in the invocation's log (or, with
    none, log it on its own at DEBUG)."""
    transfer = event.actions.transfer_to_agent
    if transfer:
        REGISTRY.inc("support_bot_transfers_total", 1.0, **{"from": event.author, "to": transfer})
    if ctx.invocation_log is not None:
        ctx.invocation_log.add(event)
    else:
        log_event(event)
