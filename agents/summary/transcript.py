"""Rendering a session's events as the fenced transcript the summariser reads.

Every line starts with `[event id] author`, so the model can cite sources and tell
user text from agent text. Tool calls and results are explicit, because they hold the
facts that matter. A payload over its cap has its long arrays shown as a count plus their
first elements, then is cut (head kept, where identifiers usually are); a payload within
the cap is shown whole, so no value in it is hidden. A transcript over its token
budget keeps its opening and its latest events and says how many it left out. Secrets
(PINs, access codes) are masked before the model sees them. A reply or failure that
replaced a draft the customer had already been shown (`agents.events.SHOWN_BEFORE`)
shows that draft too, under its own id, so a record can cite what the customer saw.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.events import SHOWN_BEFORE, Event
from agents.summary.entities import Entity, mask_text

TRUNCATED = " ...[truncated]"
FENCE_OPEN = "<<<TRANSCRIPT"
FENCE_CLOSE = "TRANSCRIPT>>>"


def approx_tokens(text: str) -> int:
    """A cheap token estimate (4 characters a token), close enough for budgets."""
    return (len(text) + 3) // 4


@dataclass(frozen=True, kw_only=True)
class RenderOptions:
    """Limits applied while rendering.

    `max_tool_chars` caps one tool payload; `max_text_chars` one message's text;
    `max_array_items` is how many elements of a long array are shown in a payload over
    `max_tool_chars` (arrays in a payload within it are shown whole); `token_budget`
    caps the whole transcript and `head_events` is how many opening events are always
    kept when the budget forces events out.
    """

    max_tool_chars: int = 2000
    max_text_chars: int = 4000
    max_array_items: int = 3
    token_budget: int = 6000
    head_events: int = 4


@dataclass(frozen=True)
class RenderedTranscript:
    """The transcript text plus what the rendering did to fit its limits."""

    text: str
    event_ids: frozenset[str]
    lines_by_event: dict[str, str]
    truncated_payloads: int = 0
    omitted_events: tuple[str, ...] = ()
    tokens: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)

    def fenced(self) -> str:
        """The request text: the transcript between fence markers, as data."""
        return f"{FENCE_OPEN}\n{self.text}\n{FENCE_CLOSE}"


def _shrink_arrays(value: Any, max_items: int) -> Any:
    if isinstance(value, list):
        head = [_shrink_arrays(v, max_items) for v in value[:max_items]]
        if len(value) > max_items:
            return [f"<{len(value)} items, first {max_items} shown>", *head]
        return head
    if isinstance(value, dict):
        return {k: _shrink_arrays(v, max_items) for k, v in value.items()}
    return value


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _payload(value: Any, options: RenderOptions) -> tuple[str, bool]:
    """One tool payload as shown, and whether it was cut. Arrays are shortened only when
    the whole payload does not fit: a four-leg itinerary in a small result keeps its fourth
    flight, which the summary must then state."""
    whole = _dump(value)
    if len(whole) <= options.max_tool_chars:
        return whole, False
    return _cut(_dump(_shrink_arrays(value, options.max_array_items)), options.max_tool_chars)


def _cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit] + TRUNCATED, True


def _indent(text: str) -> str:
    # Continuation lines are indented so a message cannot forge a "[e9] agent:" line, and
    # fence markers are broken up so a message cannot close the fence and speak outside it.
    text = text.replace(FENCE_OPEN, "<< <TRANSCRIPT").replace(FENCE_CLOSE, "TRANSCRIPT> >>")
    return text.replace("\r", "").replace("\n", "\n    ")


def render_event(event: Event, options: RenderOptions) -> tuple[str, int]:
    """One event's lines and how many of its payloads were cut."""
    head = f"[{event.id}] {event.author}"
    lines: list[str] = []
    cut = 0
    compaction = event.actions.compaction
    if compaction is not None:
        summary, was_cut = _cut(compaction.summary, options.max_text_chars)
        cut += was_cut
        span = f"{compaction.start_event_id}..{compaction.end_event_id}"
        return f"{head} SUMMARY OF {span}: {_indent(summary)}", cut
    replaced = str(event.custom_metadata.get(SHOWN_BEFORE) or "").strip()
    if replaced:
        shown, was_cut = _cut(replaced, options.max_text_chars)
        cut += was_cut
        lines.append(f"{head} SHOWN TO THE CUSTOMER FIRST, THEN REPLACED: {_indent(shown)}")
    text = event.text.strip()
    if text:
        shown, was_cut = _cut(text, options.max_text_chars)
        cut += was_cut
        lines.append(f"{head}: {_indent(shown)}")
    for call in event.function_calls:
        body, was_cut = _payload(call.args, options)
        cut += was_cut
        lines.append(f"{head} CALLS {call.name} {body}")
    for response in event.function_responses:
        body, was_cut = _payload(response.response, options)
        cut += was_cut
        lines.append(f"{head} RESULT {response.name} {body}")
    if event.error_code and not lines:
        lines.append(f"{head} ERROR {event.error_code}")
    return "\n".join(lines), cut


def render_transcript(
    events: list[Event],
    options: RenderOptions | None = None,
    *,
    mask: Sequence[Entity] = (),
) -> RenderedTranscript:
    """Render `events` within `options`' limits; see `RenderedTranscript.metadata`.

    Every sensitive entity in `mask` (PINs, access codes) is masked in the text, so the
    summariser never sees it and so cannot repeat it.
    """
    options = options or RenderOptions()
    secrets = [e for e in mask if e.sensitive]
    rendered: list[tuple[str, str]] = []
    truncated = 0
    for event in events:
        line, cut = render_event(event, options)
        if secrets and line:
            line = mask_text(line, secrets)
        truncated += cut
        if line:
            rendered.append((event.id, line))
    kept, omitted = _fit_budget(rendered, options)
    text = "\n".join(line for _, line in kept)
    tokens = approx_tokens(text)
    metadata: dict[str, Any] = {
        "events": len(events),
        "rendered_tokens": tokens,
        "truncated_payloads": truncated,
    }
    if omitted:
        metadata["token_budget_applied"] = True
        metadata["token_budget"] = options.token_budget
        metadata["omitted_events"] = len(omitted)
        metadata["omitted_range"] = f"{omitted[0]}..{omitted[-1]}"
    return RenderedTranscript(
        text=text,
        event_ids=frozenset(event_id for event_id, _ in kept if event_id),
        lines_by_event={event_id: line for event_id, line in kept if event_id},
        truncated_payloads=truncated,
        omitted_events=tuple(omitted),
        tokens=tokens,
        metadata=metadata,
    )


def _fit_budget(
    rendered: list[tuple[str, str]], options: RenderOptions
) -> tuple[list[tuple[str, str]], list[str]]:
    """Keep the opening events (the goal) and as many of the latest as the budget allows."""
    total = sum(approx_tokens(line) + 1 for _, line in rendered)
    if total <= options.token_budget:
        return rendered, []
    head = rendered[: options.head_events]
    budget = options.token_budget - sum(approx_tokens(line) + 1 for _, line in head) - 20
    tail: list[tuple[str, str]] = []
    for event_id, line in reversed(rendered[len(head) :]):
        cost = approx_tokens(line) + 1
        if cost > budget:
            break
        budget -= cost
        tail.append((event_id, line))
    tail.reverse()
    omitted = [event_id for event_id, _ in rendered[len(head) : len(rendered) - len(tail)]]
    marker = (
        f"[...] {len(omitted)} events ({omitted[0]}..{omitted[-1]}) omitted to fit the token budget"
    )
    return [*head, ("", marker), *tail], omitted


def joined(parts: Sequence[RenderedTranscript]) -> RenderedTranscript:
    """Several renderings as one: what the models of several windows were shown, together
    (the merged record's check demands only values some window's model saw)."""
    text = "\n".join(part.text for part in parts)
    return RenderedTranscript(
        text=text,
        event_ids=frozenset().union(*(part.event_ids for part in parts)),
        lines_by_event={k: v for part in parts for k, v in part.lines_by_event.items()},
        truncated_payloads=sum(part.truncated_payloads for part in parts),
        omitted_events=tuple(e for part in parts for e in part.omitted_events),
        tokens=approx_tokens(text),
    )
