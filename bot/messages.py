"""Which Slack message events the bot acts on, as pure functions of the event."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Subtypes that still carry a human's new message; everything else (edits, deletes,
# joins, topic changes, bot_message, ...) is ignored.
_ANSWERABLE_SUBTYPES = {None, "file_share", "thread_broadcast"}


@dataclass(frozen=True)
class IncomingMessage:
    """A human message the bot may answer, reduced to what the bot needs."""

    team_id: str
    channel: str
    channel_type: str
    user: str
    text: str
    ts: str
    thread_ts: str | None
    mentioned: bool
    event_id: str | None = None

    @property
    def is_dm(self) -> bool:
        return self.channel_type == "im"

    @property
    def root_ts(self) -> str:
        """The ts of the thread this message belongs to (its own ts when top-level)."""
        return self.thread_ts or self.ts


def parse_message(
    event: dict[str, Any],
    *,
    team_id: str,
    bot_user_id: str | None,
    bot_id: str | None = None,
    answer_bots: bool = False,
    event_id: str | None = None,
) -> IncomingMessage | None:
    """The message the bot should consider, or None for anything it ignores.

    Ignores its own messages always; other bots' unless `answer_bots`; and edits,
    deletes, joins and every subtype that is not a new message.
    """
    subtype = event.get("subtype")
    if subtype == "bot_message" and answer_bots and event.get("bot_id") != bot_id:
        subtype = None
    if subtype not in _ANSWERABLE_SUBTYPES:
        return None
    user = event.get("user")
    if not user or user == bot_user_id:
        return None
    if event.get("bot_id") and (event.get("bot_id") == bot_id or not answer_bots):
        return None
    text = event.get("text") or ""
    mention = f"<@{bot_user_id}>" if bot_user_id else None
    mentioned = event.get("type") == "app_mention" or bool(mention and mention in text)
    if mention:
        text = re.sub(rf"\s*{re.escape(mention)}\s*", " ", text).strip()
    channel_type = event.get("channel_type") or (
        "im" if str(event.get("channel", ""))[:1] == "D" else "channel"
    )
    return IncomingMessage(
        team_id=team_id,
        channel=event["channel"],
        channel_type=channel_type,
        user=user,
        text=text,
        ts=event["ts"],
        thread_ts=event.get("thread_ts"),
        mentioned=mentioned,
        event_id=event_id,
    )
