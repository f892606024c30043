"""Shape checks for signed Slack request bodies, before Bolt reads them.

A correct signature proves who sent a body, not that it is well-formed, and Bolt's
request parsing, id extraction and logging assume Slack's shapes: `team` is an object
or a string, `event` an object, `authorizations` a list of objects, and so on. A body
that breaks those assumptions would surface as a 500 (and Slack would retry it), so it
is refused up front with a 400 instead.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

# Keys Bolt treats as nested objects (at the top level and inside `event`/`message`).
_OBJECTS = {
    "event",
    "view",
    "message",
    "container",
    "item",
    "assistant_thread",
    "previous_message",
    "state",
    "response_metadata",
    "bot_profile",
}
# Keys Bolt accepts as an object with an `id` or as a plain id string.
_IDS = {"team", "user", "channel", "enterprise"}
# Keys Bolt matches listeners on or copies into its context: strings when present.
_STRINGS = {
    "type",
    "subtype",
    "callback_id",
    "command",
    "event_id",
    "team_id",
    "user_id",
    "channel_id",
    "enterprise_id",
    "trigger_id",
    "response_url",
    "api_app_id",
    "token",
    "action_id",
    "block_id",
    "user_team",
    "bot_id",
    "thread_ts",
    "ts",
}
# Objects Bolt dispatches on by their own `type` (it indexes body["event"]["type"] and
# body["view"]["type"] directly).
_TYPED = {"event", "view"}
_MAX_DEPTH = 4
ASSISTANT_THREAD_EVENTS = frozenset(
    {"assistant_thread_started", "assistant_thread_context_changed"}
)


def parse(body: str, content_type: str | None) -> Any:
    """The body as Bolt will parse it (JSON, or a form with an optional JSON `payload`)."""
    if not body:
        return {}
    if content_type == "application/json" or body.startswith("{"):
        return json.loads(body)
    params = dict(parse_qsl(body, keep_blank_values=True))
    if "payload" in body and "payload" in params:
        return json.loads(params["payload"])
    return params


def well_formed(payload: Any, depth: int = 0) -> bool:
    """True when `payload` has the shapes Bolt relies on (see the module docstring)."""
    if not isinstance(payload, dict):
        return False
    for key, value in payload.items():
        if key in _STRINGS and not isinstance(value, str):
            return False
        if key in _IDS and not (isinstance(value, str) or _id_object(value)):
            return False
        if key in _OBJECTS:
            if not isinstance(value, dict):
                return False
            if depth == 0 and key in _TYPED and not isinstance(value.get("type"), str):
                return False
            if depth < _MAX_DEPTH and not well_formed(value, depth + 1):
                return False
        if depth == 0 and key == "event" and not _assistant_thread_ok(value):
            return False
        if key == "authorizations" and not (
            isinstance(value, list) and all(well_formed(a, depth + 1) for a in value)
        ):
            return False
    return True


def _assistant_thread_ok(event: dict[str, Any]) -> bool:
    """An assistant panel event names its thread: Bolt's assistant utilities read the
    channel and the ts together, and fail on one without the other."""
    if event.get("type") not in ASSISTANT_THREAD_EVENTS:
        return True
    thread = event.get("assistant_thread")
    return isinstance(thread, dict) and all(
        isinstance(thread.get(k), str) and thread[k] for k in ("channel_id", "thread_ts")
    )


def _id_object(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(value[k], str) for k in ("id", "team_id", "enterprise_id") if k in value
    )
