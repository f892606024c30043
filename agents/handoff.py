"""Hand-offs in the runtime: the record that starts a handed-off session.

A hand-off record is written by people and the summary agent, never by the agent it
hands to. It is authored `handoff`, so no agent ever reads it as something it said
itself, and it carries a transfer to its target, which is how the runner routes the
next message (see `agents.runner.find_agent_to_run`).
"""

from __future__ import annotations

from agents.events import Event, EventActions, Part

HANDOFF_AUTHOR = "handoff"
HANDOFF_SOURCE = "handoff_source"
"""The record's metadata key naming the session it was made from (which it may quote)."""


def handoff_event(text: str, *, target: str, source: str | None = None) -> Event:
    """The first event of a handed-off session: `text` as quoted context for `target`,
    made from session `source` when given."""
    return Event(
        author=HANDOFF_AUTHOR,
        parts=(Part(text=text),),
        actions=EventActions(transfer_to_agent=target),
        custom_metadata={HANDOFF_SOURCE: source} if source else {},
    )
