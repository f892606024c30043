"""Loading the evaluation transcripts (`transcripts.jsonl`) as runtime events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.events import Event, FunctionCall, FunctionResponse, Part

AGENT_NAME = "support_agent"


@dataclass(frozen=True)
class ExpectedEntity:
    """One hand-labelled entity of a conversation."""

    type: str
    value: str
    surfaces: tuple[str, ...]
    event_ids: tuple[str, ...]
    sensitive: bool


@dataclass(frozen=True)
class LabelledConversation:
    """One dataset row: its events (not yet appended anywhere) and expected entities."""

    id: str
    source: str
    events: tuple[Event, ...]
    expected: tuple[ExpectedEntity, ...]


def load_conversations(path: str | Path) -> Iterator[LabelledConversation]:
    """Yield every conversation of a jsonl file."""
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield conversation_from_row(json.loads(line))


def conversation_from_row(row: dict[str, Any]) -> LabelledConversation:
    """Map one row: user -> "user", agent -> `AGENT_NAME`, tool -> call event + response event.

    Ids are left empty so a session service assigns them on append; a tool row becomes two
    events, so dataset ids and session ids differ (entities are compared by value).
    """
    events: list[Event] = []
    for index, raw in enumerate(row.get("events", [])):
        author = raw.get("author")
        text = raw.get("text") or ""
        if author == "tool" and raw.get("tool_call"):
            call = raw["tool_call"]
            call_id = f"call_{row.get('id', 'x')}_{index}"
            name = str(call.get("name") or "tool")
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            result = raw.get("tool_result")
            response = result if isinstance(result, dict) else {"result": result or text}
            events.append(
                Event(
                    author=AGENT_NAME,
                    parts=(Part(function_call=FunctionCall(id=call_id, name=name, args=args)),),
                )
            )
            events.append(
                Event(
                    author=AGENT_NAME,
                    parts=(
                        Part(
                            function_response=FunctionResponse(
                                id=call_id, name=name, response=response
                            )
                        ),
                    ),
                )
            )
        elif text:
            events.append(
                Event(author="user" if author == "user" else AGENT_NAME, parts=(Part(text=text),))
            )
    expected = tuple(
        ExpectedEntity(
            type=e["type"],
            value=str(e["value"]),
            surfaces=tuple(str(s) for s in e.get("surfaces", ())),
            event_ids=tuple(e.get("event_ids", ())),
            sensitive=bool(e.get("sensitive")),
        )
        for e in row.get("expected_entities", [])
    )
    return LabelledConversation(
        id=str(row.get("id")),
        source=str(row.get("source", "")),
        events=tuple(events),
        expected=expected,
    )


def numbered(events: tuple[Event, ...] | list[Event]) -> list[Event]:
    """The events with `e1..eN` ids, as a session service would assign them."""
    return [event.model_copy(update={"id": f"e{i}"}) for i, event in enumerate(events, start=1)]
