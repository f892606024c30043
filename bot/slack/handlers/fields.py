"""Reading the fields of Slack payloads that may lack them, or hold the wrong type."""

from __future__ import annotations

import json
from typing import Any

from bot.slack.command_args import ThreadRef


def path(data: Any, *keys: str) -> Any:
    """`data[k1][k2]...`, or None where any step is missing or not an object."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def text(value: Any) -> str | None:
    """`value` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def who(command: dict[str, Any]) -> tuple[str | None, str | None]:
    """A slash command's (team, user), each None when missing."""
    return text(command.get("team_id")), text(command.get("user_id"))


def handoff_metadata(raw: Any) -> dict[str, str] | None:
    """The hand-off modal's private metadata, if it is the object the shortcut wrote
    (`bot.slack.handlers.shortcuts`)."""
    try:
        meta = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    keys = ("team", "channel", "thread_ts")
    if not isinstance(meta, dict) or not all(text(meta.get(k)) for k in keys):
        return None
    return {k: meta[k] for k in keys}


def shortcut_thread(shortcut: dict[str, Any]) -> tuple[str, str, ThreadRef] | None:
    """(team, user, thread) of a message shortcut, or None when the payload lacks them."""
    team, user = text(path(shortcut, "team", "id")), text(path(shortcut, "user", "id"))
    channel = text(path(shortcut, "channel", "id"))
    ts = text(path(shortcut, "message", "thread_ts")) or text(path(shortcut, "message", "ts"))
    if team is None or user is None or channel is None or ts is None:
        return None
    return team, user, ThreadRef(channel=channel, thread_ts=ts)
