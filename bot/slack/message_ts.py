"""Which Slack message an agent event came from or was posted as (its `ts`).

The runtime knows nothing of Slack: the bot keeps a message's ts in the event's
`custom_metadata` under `SLACK_TS`, stamped by `SlackTsPlugin`, so that any citation of
the event (a digest's sources, say) can become a permalink.
"""

from __future__ import annotations

from typing import Any

from agents.callbacks import BasePlugin
from agents.context import InvocationContext
from agents.events import Event

# The event's key; migration 0004 moved the old `events.slack_ts` column under it.
SLACK_TS = "slack_ts"
# Invocation metadata only: the `ReplyMessage` the reply is (or will be) posted as.
REPLY_TS = "slack_reply_ts"
# On a user event whose message is not in its thread's Slack thread (a DM message that
# continues a conversation): True at the bottom of the DM, whose link names no thread, or
# the ts of the Slack thread it is in (under a message folded into the conversation).
OUTSIDE_THREAD = "slack_outside_thread"


class ReplyMessage:
    """The Slack message a turn's reply goes into: its ts is known from the start with a
    placeholder, and only once the reply's first content is shown with a stream. The
    answers the turn stores after that carry it; `stamped` completes one stored before."""

    __slots__ = ("ts",)

    def __init__(self, ts: str | None = None) -> None:
        self.ts = ts


def stamped(event: Event, ts: str) -> Event | None:
    """`event` carrying `ts` as the message it was posted as, or None when it already
    carries one."""
    if SLACK_TS in event.custom_metadata:
        return None
    return event.with_metadata(**{SLACK_TS: ts})


def message_ts(event: Event) -> str | None:
    """The ts of the Slack message `event` came from or was posted as, if any."""
    ts = event.custom_metadata.get(SLACK_TS)
    return ts if isinstance(ts, str) and ts else None


def turn_metadata(
    user_ts: str | None, reply: ReplyMessage | str | None, *, outside_thread: bool | str = False
) -> dict[str, Any]:
    """What `Runner.run_async(custom_metadata=...)` gets for one Slack message (empty
    for a turn that has no Slack message, the terminal chat's say); `reply` is the
    message the reply goes into, or its ts when it is known already."""
    metadata: dict[str, Any] = {}
    if user_ts:
        metadata[SLACK_TS] = user_ts
    if isinstance(reply, str):
        reply = ReplyMessage(reply)
    if reply is not None:
        metadata[REPLY_TS] = reply
    if outside_thread:
        metadata[OUTSIDE_THREAD] = outside_thread
    return metadata


def _outside_mark(value: Any) -> bool | str:
    return value if value is True or (isinstance(value, str) and value) else False


def outside_thread(event: Event) -> bool:
    """True for a user event whose message is not in its thread's Slack thread."""
    return bool(_outside_mark(event.custom_metadata.get(OUTSIDE_THREAD)))


def own_thread(event: Event) -> str | None:
    """The other Slack thread a user event's message is in (see `OUTSIDE_THREAD`)."""
    mark = _outside_mark(event.custom_metadata.get(OUTSIDE_THREAD))
    return mark if isinstance(mark, str) else None


class SlackTsPlugin(BasePlugin):
    """Stamps the user's message ts on the user event, and the reply's on every answer.

    An answer is an event with text that ends its agent's turn (a failure notice too):
    each is shown as, and so can be cited as, the reply message.
    """

    name = "slack_ts"

    async def on_user_message(self, ctx: InvocationContext, event: Event) -> Event | None:
        ts = ctx.custom_metadata.get(SLACK_TS)
        if not ts:
            return None
        stamp: dict[str, Any] = {SLACK_TS: ts}
        mark = _outside_mark(ctx.custom_metadata.get(OUTSIDE_THREAD))
        if mark:
            stamp[OUTSIDE_THREAD] = mark
        return event.with_metadata(**stamp)

    async def on_event(self, ctx: InvocationContext, event: Event) -> Event | None:
        reply = ctx.custom_metadata.get(REPLY_TS)
        ts = reply.ts if isinstance(reply, ReplyMessage) else None
        if ts and event.text and event.is_final_response():
            return stamped(event, ts)
        return None
