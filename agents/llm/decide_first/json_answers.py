"""Reading a model's JSON answers: the first object in a text, a reply wrapped in an
object, and the `reply` field of a reply asked for as an object."""

from __future__ import annotations

import json
from typing import Any


def reply_field(text: str) -> str:
    """The `reply` of a `reply_request` answer ("" when it has none)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = find_json_object_any(text)
    if isinstance(value, dict) and isinstance(value.get("reply"), str):
        return value["reply"].strip()
    return ""


def unwrapped_reply(text: str) -> str | None:
    """The text of a reply written as a one-field JSON object (`{"message": "..."}`), the
    way a small model primed by JSON answers sometimes writes a plain reply; None for any
    other text. No customer reads JSON."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    if isinstance(value, dict) and len(value) == 1:
        (inner,) = value.values()
        if isinstance(inner, str) and inner.strip():
            return inner.strip()
    return None


def find_json_object_any(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (of any shape), if any."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None
