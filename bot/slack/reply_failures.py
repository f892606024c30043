"""When a message gets no reply: the notices a thread is told instead, and the empty
message a reply was to go into taken back.

- `fail`: a person will follow up (the invocation failed, Slack would not take the
  reply, or the turn was interrupted); the thread is flagged for that person.
- `refuse_busy`: "busy, try again shortly", over the user's rate or the thread's queue.
- `interrupted`: a turn cancelled at shutdown answers its open tool calls, then fails.
- `withdraw`: a peer process took the message over and answers it; this one's empty
  placeholder or stream goes.

None of them raises: each logs what it could not do. A message whose notice could not
be posted stays in flight, so the next start-up tries again (`bot.slack.recovery`).
"""

from __future__ import annotations

import logging

import aiohttp
from slack_sdk.errors import SlackApiError

from agents.metrics import REGISTRY
from bot.slack.assistant.status import TurnStatus
from bot.slack.render.blocks import BUSY_TEXT, INTERRUPTED_TEXT, notice_blocks
from bot.slack.services import BotServices
from bot.slack.streaming import SlackStream
from bot.slack.thread_posts import ThreadPosts, thread_extra
from bot.threads.turn import close_interrupted_calls
from storage.delivery.inflight import InflightKey
from storage.threads import ThreadKey, ThreadRecord

log = logging.getLogger(__name__)

REGISTRY.describe(
    "support_bot_invocation_failures_total", "counter", "Messages answered with a failure notice"
)
REGISTRY.describe(
    "support_bot_busy_refusals_total", "counter", "Messages refused over a rate or queue cap"
)


class ReplyFailures:
    """Tells a thread its message gets no reply, and clears the message."""

    def __init__(self, services: BotServices, posts: ThreadPosts) -> None:
        self.services = services
        self.posts = posts

    async def fail(
        self,
        key: ThreadKey,
        tracked: InflightKey,
        message_ts: str | None,
        reason: str,
        text: str,
        *,
        stream: SlackStream | None = None,
        broadcast: bool = False,
        status: TurnStatus | None = None,
    ) -> None:
        """Tell the thread a person will follow up, and flag it.

        The notice replaces message `message_ts` (the placeholder or stream the reply was
        to go into), else it is posted; a `stream` is stopped first. With `broadcast` a
        new post also shows at the bottom of the DM.
        """
        REGISTRY.inc("support_bot_invocation_failures_total", reason=reason)
        if stream is not None:
            await stream.stop(failed=True)
        try:
            await self.services.db.threads.flag(key, reason)
        except Exception:
            log.exception("could not flag thread", extra=thread_extra(key))
        try:
            shown = await self.posts.replace_or_post(
                key, message_ts, None, broadcast, text=text, blocks=notice_blocks(text)
            )
        except Exception:
            log.exception("could not post failure notice", extra=thread_extra(key))
            return
        if status is not None and shown != message_ts:
            status.replied()
        await self._clear(key, tracked)

    async def refuse_busy(self, key: ThreadKey, tracked: InflightKey, *, broadcast: bool) -> None:
        """Say "busy, try again shortly" in the thread and let the message go."""
        REGISTRY.inc("support_bot_busy_refusals_total")
        try:
            await self.posts.post(
                key,
                identity={},
                broadcast=broadcast,
                text=BUSY_TEXT,
                blocks=notice_blocks(BUSY_TEXT),
            )
        except Exception:
            log.exception("could not post busy notice", extra=thread_extra(key))
        await self._clear(key, tracked)

    async def interrupted(
        self,
        key: ThreadKey,
        tracked: InflightKey,
        message_ts: str | None,
        record: ThreadRecord,
        *,
        stream: SlackStream | None,
        broadcast: bool,
    ) -> None:
        """A cancelled turn (shutdown): answer its open tool calls, then tell the thread."""
        try:
            await close_interrupted_calls(self.services.db, record)
        except Exception:
            log.exception("could not close interrupted calls", extra=thread_extra(key))
        await self.fail(
            key,
            tracked,
            message_ts,
            "interrupted",
            INTERRUPTED_TEXT,
            stream=stream,
            broadcast=broadcast,
        )

    async def withdraw(
        self, key: ThreadKey, message_ts: str | None, stream: SlackStream | None
    ) -> None:
        """A peer took the message over: take back the (empty) message `message_ts` the
        reply was to go into, stopping its `stream` first."""
        log.warning("message taken over by a peer", extra=thread_extra(key))
        if stream is not None:
            await stream.stop(failed=False)
        if message_ts is None:
            return
        try:
            await self.services.client.chat_delete(channel=key.channel_id, ts=message_ts)
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
            log.warning("empty reply message not deleted: %s", type(exc).__name__)

    async def _clear(self, key: ThreadKey, tracked: InflightKey) -> None:
        try:
            await self.services.db.inflight.finish(tracked, owner=self.services.owner)
        except Exception:
            log.exception("could not clear in-flight message", extra=thread_extra(key))
