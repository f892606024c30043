"""The log of an invocation: one INFO line when it ends, one DEBUG line per event.

An invocation stores two events at least (the person's message and the answer), more
with hand-offs and tools. A structured line per event at INFO cost about 2.6 % of the
bot's CPU per message under `bench/slack_load.py` (py-spy), so INFO gets one line per
invocation with what reconstructs its path: the events it stored, in order, the agents
that wrote them, the hand-offs, the tools called, the tokens spent, how it ended and how
long it took. The per-event lines (`agents.events`, message `event`) are still there at
DEBUG, with the fields they always had.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from agents.events import Event

event_logger = logging.getLogger("agents.events")
invocation_logger = logging.getLogger("agents.invocations")


class InvocationLog:
    """What one invocation stored, gathered event by event, logged once at its end."""

    __slots__ = (
        "agents",
        "completion_tokens",
        "error_code",
        "event_ids",
        "invocation_id",
        "parent_invocation_id",
        "prompt_tokens",
        "session_id",
        "started",
        "tools",
        "transfers",
    )

    def __init__(
        self, invocation_id: str, session_id: str, *, parent_invocation_id: str | None = None
    ) -> None:
        self.invocation_id = invocation_id
        self.session_id = session_id
        self.parent_invocation_id = parent_invocation_id
        self.started = time.perf_counter()
        self.event_ids: list[str] = []
        self.agents: list[str] = []
        self.transfers: list[str] = []
        self.tools: list[str] = []
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.error_code: str | None = None

    def add(self, event: Event) -> None:
        """Note one stored event (and log it at DEBUG)."""
        self.event_ids.append(event.id)
        author = event.author
        if author != "user" and author not in self.agents:
            self.agents.append(author)
        transfer = event.actions.transfer_to_agent
        if transfer:
            self.transfers.append(f"{author}->{transfer}")
        for part in event.parts:
            if part.function_call is not None:
                self.tools.append(part.function_call.name)
        usage = event.usage
        if usage is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + usage.prompt_tokens
            self.completion_tokens = (self.completion_tokens or 0) + usage.completion_tokens
        if event.error_code:
            self.error_code = event.error_code
        log_event(event)

    def finish(self, outcome: str) -> None:
        """Log the invocation's one INFO line. `outcome`: `completed`, `failed` (it ended
        on an error event), `closed` (the caller stopped reading), `cancelled`, or
        `raised` (an exception escaped it: the database failed, say)."""
        if outcome == "completed" and self.error_code:
            outcome = "failed"
        fields: dict[str, Any] = {
            "invocation_id": self.invocation_id,
            "session_id": self.session_id,
            "outcome": outcome,
            "events": self.event_ids,
            "agents": self.agents,
            "transfers": self.transfers or None,
            "tools": self.tools or None,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "error_code": self.error_code,
            "ms": round((time.perf_counter() - self.started) * 1000, 1),
        }
        if self.parent_invocation_id:
            fields["parent_invocation_id"] = self.parent_invocation_id
        invocation_logger.info("invocation", extra=fields)


def log_event(event: Event) -> None:
    """One structured DEBUG line for one stored event (nothing built below DEBUG)."""
    if not event_logger.isEnabledFor(logging.DEBUG):
        return
    transfer = event.actions.transfer_to_agent
    event_logger.debug(
        "event",
        extra={
            "event_id": event.id,
            "author": event.author,
            "branch": event.branch,
            "invocation_id": event.invocation_id,
            "transfer_to": transfer,
            "tools": [c.name for c in event.function_calls] or None,
            "prompt_tokens": event.usage.prompt_tokens if event.usage else None,
            "completion_tokens": event.usage.completion_tokens if event.usage else None,
            "error_code": event.error_code,
        },
    )
