"""Renderings of a validated record: plain text and JSON (richer views are the transport's).

Prose is always generated from the record, never the reverse. User claims are marked
in every rendering.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agents.summary.record import HandoffRecord, Item
from agents.summary.results import WindowGap

# The reading order of a handoff.
ORDER = (
    ("facts", "Facts"),
    ("decisions", "Decisions"),
    ("commitments", "Commitments"),
    ("open_questions", "Open questions"),
)
CLAIM_LABEL = "user claim, unverified"


def to_json(record: HandoffRecord) -> dict[str, Any]:
    """The record as JSON-ready data, with each item's `user_claim` label."""
    return record.model_dump(mode="json")


def to_json_text(record: HandoffRecord) -> str:
    """The record as indented JSON text."""
    return json.dumps(to_json(record), ensure_ascii=False, indent=2)


def _item_line(item: Item) -> str:
    claim = f"[{CLAIM_LABEL}] " if item.user_claim else ""
    return f"- {claim}{item.text} ({', '.join(item.sources)})"


def gaps_text(gaps: Sequence[WindowGap], windows: int, ranges: Sequence[str] = ()) -> str:
    """`2 of 9 windows unavailable: see e12–e20, e41–e47`; `ranges` replaces the plain
    labels (with links, say)."""
    shown = ", ".join(ranges or [gap.label() for gap in gaps])
    return f"{len(gaps)} of {windows} windows unavailable: see {shown}"


def status_label(gaps: Sequence[WindowGap], windows: int) -> str:
    """What a reader may trust of a record: `validated` when every window passed, else
    `partial: 7 of 9 windows` (the windows a validated record covers, of all)."""
    if not gaps:
        return "validated"
    return f"partial: {windows - len(gaps)} of {windows} windows"


def unsummarised_text(tail: WindowGap, shown: str = "") -> str:
    """`The last messages, e30–e34, hold no values or promises and are not summarised`;
    `shown` replaces the plain label (with links, say)."""
    return (
        f"The last messages, {shown or tail.label()}, hold no values or promises "
        "and are not summarised"
    )


def to_text(
    record: HandoffRecord,
    *,
    source_session_id: str | None = None,
    gaps: Sequence[WindowGap] = (),
    windows: int = 0,
    unsummarised: WindowGap | None = None,
) -> str:
    """Plain sections for the next agent's first message; `gaps` (windows no validated
    record covers) and an `unsummarised` tail are named last, so the reader knows what
    to read in the thread."""
    lines = [f"Handoff summary{f' of session {source_session_id}' if source_session_id else ''}"]
    lines.append(f"Goal: {record.goal}")
    for section, title in ORDER:
        items = getattr(record, section)
        if not items:
            continue
        lines.append(f"{title}:")
        lines.extend(_item_line(item) for item in items)
    if gaps:
        lines.append(gaps_text(gaps, windows) + " (not summarised; read those events)")
    if unsummarised is not None:
        lines.append(unsummarised_text(unsummarised) + "; read those events")
    return "\n".join(lines)
