"""Which conversation a direct message belongs to.

The rule (`storage.dm_conversations` keeps the state):

- a DM message in a Slack thread belongs to that thread, and keeps the DM's current
  conversation going when the thread is that conversation; a reply under a top-level
  message that was folded into a conversation belongs to that conversation (answered
  in its thread and shown in the DM, like a top-level message);
- a top-level DM message continues the DM's current conversation: same thread, same
  session, one digest. The bot answers in the conversation's thread and also shows the
  answer at the bottom of the DM (`reply_broadcast`), where the user is looking;
- it starts a new conversation, rooted at itself, when the current one has had no
  message for `DM_CONVERSATION_IDLE_MINUTES`, or after the user's `/new`.
"""

from __future__ import annotations

import dataclasses
import time

from bot.slack.messages import IncomingMessage
from storage.database import Database
from storage.dm_conversations import DmPlacement

NEW_STARTED = "Done: your next message here starts a new conversation."
NEW_ONLY_IN_DM = (
    "`/new` works in a direct message with me. In a channel, start a new thread instead."
)


async def place(
    db: Database, msg: IncomingMessage, *, idle_minutes: float
) -> tuple[IncomingMessage, DmPlacement | None]:
    """`msg`, placed in its DM conversation (unchanged outside DMs and in threads, but
    for a reply under a top-level message folded into a conversation: it joins that
    conversation), or, for a top-level DM message, `msg` and its placement: run in the
    transaction that accepts the message (`SlackReplier.accept`), whose result is the
    message placed. A DM thread's message keeps its conversation going as it is
    accepted, see `keeps_conversation`."""
    if not msg.is_dm:
        return msg, None
    if msg.thread_ts is not None:
        root = await db.dm_conversations.folded_root(msg.team_id, msg.channel, msg.thread_ts)
        return (msg if root is None else dataclasses.replace(msg, conversation_ts=root)), None
    placement = db.dm_conversations.placement(
        msg.team_id, msg.channel, msg.ts, now=time.time(), idle_after=idle_minutes * 60
    )
    return msg, placement


def keeps_conversation(msg: IncomingMessage) -> bool:
    """Whether `msg` (a DM message in a Slack thread) keeps its DM's conversation active
    when that thread is the conversation: written in the same transaction that accepts
    the message (`InflightStore.accept`), so the ack waits for one write, not two."""
    return msg.is_dm and msg.thread_ts is not None
