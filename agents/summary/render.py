"""Renderings of a validated record: plain text and JSON (richer views are the transport's).

Prose is always generated from the record, never the reverse. User claims are marked
in every rendering.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agents.events import Event
from agents.knowledge.thread_sources import ThreadSources, sources_text
from agents.summary.entities import EntityExtractor
from agents.summary.record import HandoffRecord, Item
from agents.summary.results import WindowGap
from agents.summary.transcript import RenderOptions, render_transcript

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
    sources: ThreadSources = ThreadSources(),
) -> str:
    """Plain sections for the next agent's first message, then the documentation the
    thread's replies cited (`sources`, from their events, never from the model); `gaps`
    (windows no validated record covers) and an `unsummarised` tail are named last, so
    the reader knows what to read in the thread."""
    lines = [f"Handoff summary{f' of session {source_session_id}' if source_session_id else ''}"]
    lines.append(f"Goal: {record.goal}")
    for section, title in ORDER:
        items = getattr(record, section)
        if not items:
            continue
        lines.append(f"{title}:")
        lines.extend(_item_line(item) for item in items)
    if sources.shown:
        lines.append(sources_text(sources))
    if gaps:
        lines.append(gaps_text(gaps, windows) + " (not summarised; read those events)")
    if unsummarised is not None:
        lines.append(unsummarised_text(unsummarised) + "; read those events")
    return "\n".join(lines)


# The raw events a hand-off carries for what its record does not cover: about 12,000
# characters in all, shared by the spans, each span keeping its first and latest events.
UNCOVERED = RenderOptions(token_budget=3000, max_text_chars=2000, max_tool_chars=500)
MIN_SPAN_TOKENS = 400


def span_events(events: Sequence[Event], span: WindowGap) -> list[Event]:
    """The events of `events` from `span.start_id` to `span.end_id`, in order."""
    ids = [e.id for e in events]
    if span.start_id not in ids or span.end_id not in ids:
        return []
    return list(events[ids.index(span.start_id) : ids.index(span.end_id) + 1])


def uncovered_text(
    events: Sequence[Event],
    gaps: Sequence[WindowGap],
    unsummarised: WindowGap | None,
    *,
    options: RenderOptions = UNCOVERED,
) -> str:
    """Every event no validated record covers (each gap window, and an `unsummarised`
    open tail), raw: fenced as data, bounded (`options`' budget shared by the spans),
    secrets masked over the whole thread, each span headed by its event ids so a reader
    can find it in the source thread. Empty when the record covers everything."""
    spans = [(f"Window {gap.label()}, not summarised", gap) for gap in gaps]
    if unsummarised is not None:
        spans.append((f"The latest messages, {unsummarised.label()}, not summarised", unsummarised))
    if not spans:
        return ""
    mask = EntityExtractor().extract(events)
    share = max(MIN_SPAN_TOKENS, options.token_budget // len(spans))
    each = replace(options, token_budget=share)
    lines = ["Events the record does not cover, as data (read them; secrets masked):"]
    for title, span in spans:
        lines.append(f"{title}:")
        lines.append(render_transcript(span_events(events, span), each, mask=mask).fenced())
    return "\n".join(lines)
