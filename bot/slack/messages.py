"""Which Slack message events the bot acts on, as pure functions of the event.

Payloads pass signature verification but are still untrusted in shape: every field the
bot stores or routes on is type- and format-checked here, and anything that is not a
well-formed human message is ignored rather than stored.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, TypeGuard

# Subtypes that still carry a human's new message; everything else (edits, deletes,
# joins, topic changes, bot_message, ...) is ignored.
_ANSWERABLE_SUBTYPES = {None, "file_share", "thread_broadcast"}
_CHANNEL_TYPES = {"im", "mpim", "channel", "group"}
# Slack's own limit on a message's text; a longer "message" is not from Slack.
MAX_TEXT_CHARS = 40_000
_TS = re.compile(r"\d{1,12}\.\d{1,8}")
_ID = re.compile(r"[A-Z0-9][A-Z0-9_]{0,31}")
_TEAM = re.compile(r"[A-Z0-9_]{0,32}")
_EVENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


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
    # A DM message outside its conversation's Slack thread: the root of the DM
    # conversation it continues or starts (`storage.dm_conversations`). Set for a
    # top-level DM message, and for a reply under a top-level message that was folded
    # into an earlier conversation.
    conversation_ts: str | None = None

    @property
    def is_dm(self) -> bool:
        return self.channel_type == "im"

    @property
    def shown_in_dm(self) -> bool:
        """A DM message not written in its conversation's thread (at the bottom of the
        DM, or under a message folded into the conversation): the bot's answers are
        threaded to the conversation and also shown in the DM (`reply_broadcast`)."""
        return self.is_dm and self.thread_ts != self.root_ts

    @property
    def outside_thread(self) -> bool:
        """A DM message that continues an earlier conversation from outside its Slack
        thread: it belongs to that conversation's thread without being in it."""
        return self.thread_ts != self.root_ts and self.root_ts != self.ts

    @property
    def outside_mark(self) -> bool | str:
        """Where a message outside its conversation's thread is (`outside_thread`): the
        Slack thread it is in, or True at the bottom of the DM; False in its thread."""
        if not self.outside_thread:
            return False
        return self.thread_ts or True

    @property
    def root_ts(self) -> str:
        """The ts of the thread this message belongs to: the DM conversation it
        continues, else its Slack thread, else its own ts."""
        return self.conversation_ts or self.thread_ts or self.ts

    def to_record(self) -> dict[str, Any]:
        """A JSON-ready dict, kept while the message is in flight (see `from_record`)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> IncomingMessage:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in record.items() if k in names})


def _matches(value: Any, pattern: re.Pattern[str]) -> TypeGuard[str]:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


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

    Ignores its own messages always; other bots' unless `answer_bots`; edits, deletes,
    joins and every subtype that is not a new message; and any event whose fields are
    missing, of the wrong type, malformed, or larger than Slack allows.
    """
    if not isinstance(event, dict):
        return None
    subtype = event.get("subtype")
    if subtype is not None and not isinstance(subtype, str):
        return None
    event_bot_id = event.get("bot_id")
    if subtype == "bot_message" and answer_bots and event_bot_id != bot_id:
        subtype = None
    if subtype not in _ANSWERABLE_SUBTYPES:
        return None
    user = event.get("user")
    if not _matches(user, _ID) or user == bot_user_id:
        return None
    if event_bot_id and (event_bot_id == bot_id or not answer_bots):
        return None
    channel, ts, thread_ts = event.get("channel"), event.get("ts"), event.get("thread_ts")
    if not _matches(channel, _ID) or not _matches(ts, _TS):
        return None
    if thread_ts is not None and not _matches(thread_ts, _TS):
        return None
    if not _matches(team_id, _TEAM) or (event_id is not None and not _matches(event_id, _EVENT_ID)):
        return None
    text = event.get("text") or ""
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
        return None
    mention = f"<@{bot_user_id}>" if bot_user_id else None
    mentioned = event.get("type") == "app_mention" or bool(mention and mention in text)
    if mention:
        text = re.sub(rf"\s*{re.escape(mention)}\s*", " ", text).strip()
    channel_type = event.get("channel_type")
    if channel_type not in _CHANNEL_TYPES:
        channel_type = "im" if channel.startswith("D") else "channel"
    return IncomingMessage(
        team_id=team_id,
        channel=channel,
        channel_type=channel_type,
        user=user,
        text=text,
        ts=ts,
        thread_ts=thread_ts,
        mentioned=mentioned,
        event_id=event_id,
    )
