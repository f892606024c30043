"""Renderings of a validated record: plain text, Slack Block Kit, JSON.

Prose is always generated from the record, never the reverse. User claims are marked
in every rendering; commitments stand out, because they are the most expensive thing
for the next reader to miss.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from agents.events import Event
from agents.summary.record import HandoffRecord, Item

# The reading order of a handoff; commitments stand out in Block Kit instead, because a
# broken promise costs more than a missed fact.
ORDER = (
    ("facts", "Facts"),
    ("decisions", "Decisions"),
    ("commitments", "Commitments"),
    ("open_questions", "Open questions"),
)
CLAIM_LABEL = "user claim, unverified"
LinkFor = Callable[[Event], "str | None"]


def to_json(record: HandoffRecord) -> dict[str, Any]:
    """The record as JSON-ready data, with each item's `user_claim` label."""
    return record.model_dump(mode="json")


def to_json_text(record: HandoffRecord) -> str:
    return json.dumps(to_json(record), ensure_ascii=False, indent=2)


def _item_line(item: Item) -> str:
    claim = f"[{CLAIM_LABEL}] " if item.user_claim else ""
    return f"- {claim}{item.text} ({', '.join(item.sources)})"


def to_text(record: HandoffRecord, *, source_session_id: str | None = None) -> str:
    """Plain sections for the next agent's first message."""
    lines = [f"Handoff summary{f' of session {source_session_id}' if source_session_id else ''}"]
    lines.append(f"Goal: {record.goal}")
    for section, title in ORDER:
        items = getattr(record, section)
        if not items:
            continue
        lines.append(f"{title}:")
        lines.extend(_item_line(item) for item in items)
    return "\n".join(lines)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _source_refs(item: Item, events: dict[str, Event], link_for: LinkFor | None) -> str:
    refs = []
    for source in item.sources:
        event = events.get(source)
        url = link_for(event) if (link_for is not None and event is not None) else None
        refs.append(f"<{url}|{source}>" if url else source)
    return ", ".join(refs)


def to_blocks(
    record: HandoffRecord,
    *,
    events: Sequence[Event] = (),
    link_for: LinkFor | None = None,
    title: str = "Handoff summary",
) -> list[dict[str, Any]]:
    """Slack Block Kit blocks; each source links to its Slack message when `link_for` gives one."""
    by_id = {event.id: event for event in events}
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*Goal:* {_escape(record.goal)}"}},
    ]
    for section, heading in ORDER:
        items: list[Item] = getattr(record, section)
        if not items:
            continue
        lines = []
        for item in items:
            claim = f"_{CLAIM_LABEL}:_ " if item.user_claim else ""
            text = _escape(item.text)
            if section == "commitments":
                text = f"*{text}*"
            lines.append(f"• {claim}{text} ({_source_refs(item, by_id, link_for)})")
        marker = ":handshake: " if section == "commitments" else ""
        body = f"{marker}*{heading}*\n" + "\n".join(lines)
        # Never cut here: whoever posts splits an oversize section on line boundaries.
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": body}})
    if any(item.user_claim for _, _, item in record.items()):
        blocks.append(
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": f"_{CLAIM_LABEL}_: supported only by what the user wrote.",
                    }
                ],
            }
        )
    return blocks
