"""The checklist the summariser gets with the transcript: what the validator will demand.

Small models drop identifiers and fold promises into facts. The same deterministic
extractors that the validator uses (high-value entities, agent promises) are run before
the model call, and their findings are listed after the fenced transcript, with the
events where each appears. The list is computed by code from the transcript, so it adds
no instruction from the conversation itself; sensitive values are never listed.
"""

from __future__ import annotations

from agents.events import Event
from agents.summary.coverage import find_promises
from agents.summary.entities import Entity

MAX_LISTED = 25
HEADER = "Checklist computed from the transcript by the system (not part of the transcript):"


def checklist(events: list[Event], entities: list[Entity]) -> str:
    """The checklist text, or "" when there is nothing to demand."""
    values = [e for e in entities if e.high_value and not e.sensitive][:MAX_LISTED]
    promises = find_promises(events)[:MAX_LISTED]
    if not values and not promises:
        return ""
    lines = [HEADER]
    if values:
        lines.append(
            "Each of these values must appear, copied exactly, in an item that cites one of "
            "the events listed for it:"
        )
        lines.extend(f"- {e.value} (in {', '.join(e.event_ids[:3])})" for e in values)
    if promises:
        lines.append("The agent made these promises; record each as a commitment citing its event:")
        lines.extend(f'- {p.event_id}: "{p.sentence[:200]}"' for p in promises)
    return "\n".join(lines)
