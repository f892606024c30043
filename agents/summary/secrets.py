"""Secrets masked across a whole thread, not only inside the window that marks them.

A window's own events may not show that a value is secret: "my PIN is" sits in one
window and "4321" opens the next. The thread's secrets are found over every event
(`EntityExtractor.extract`, which also joins a cue to the next message's digits), then
each window masks those its events mention, before any text of it reaches a model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace

from agents.events import Event
from agents.summary.entities import Entity, mentions, normalize


def secrets_within(secrets: Iterable[Entity], events: Sequence[Event]) -> list[Entity]:
    """The sensitive entities of `secrets` (found over a whole thread) that `events` (a
    window of it) mention, each naming the events of `events` that do: a window masks a
    secret its own messages do not mark as one ("my PIN is" sat in an earlier window)."""
    found = []
    for secret in secrets:
        if not secret.sensitive:
            continue
        ids = tuple(e.id for e in events if mentions(_event_text(e), secret))
        if ids:
            found.append(replace(secret, event_ids=ids, high_value=False))
    return found


def with_secrets(entities: Sequence[Entity], secrets: Sequence[Entity]) -> list[Entity]:
    """`entities`, with every value one of `secrets` holds made sensitive, and the
    secrets `entities` lack added."""
    values = {normalize("", s.value) for s in secrets}
    out = [
        replace(e, sensitive=True, high_value=False) if normalize("", e.value) in values else e
        for e in entities
    ]
    have = {normalize("", e.value) for e in out if e.sensitive}
    return out + [s for s in secrets if normalize("", s.value) not in have]


def _event_text(event: Event) -> str:
    chunks = [event.text]
    chunks += [json.dumps(c.args, default=str) for c in event.function_calls]
    chunks += [json.dumps(r.response, default=str) for r in event.function_responses]
    return "\n".join(chunks)
