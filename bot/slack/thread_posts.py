"""Posting into a message's Slack thread: a new message (as an agent, and also shown at
the bottom of a DM when the person wrote there), or an earlier message turned into a
new one in place. The reply (`bot.slack.reply_posting`) and the failure notices
(`bot.slack.reply_failures`) are all shown this way.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError

from bot.slack.render.limits import NO_UNFURL
from bot.slack.services import BotServices
from storage.threads import ThreadKey

log = logging.getLogger(__name__)


def shown_in_dm(broadcast: bool) -> dict[str, Any]:
    """Arguments that also show a threaded post at the bottom of the DM, where a user who
    wrote there is looking (`IncomingMessage.shown_in_dm`)."""
    return {"reply_broadcast": True} if broadcast else {}


def thread_extra(key: ThreadKey) -> dict[str, str]:
    """A log record's `extra` naming the thread it is about."""
    return {"slack_thread": key.thread_ts}


class ThreadPosts:
    """Writes messages into threads with the bot's client."""

    def __init__(self, services: BotServices) -> None:
        self.services = services

    def identity(self, agent: str) -> dict[str, Any]:
        """The arguments that post as `agent` (its username), when the app may."""
        return {"username": agent} if self.services.settings.chat_write_customize else {}

    async def post(
        self, key: ThreadKey, *, identity: dict[str, Any], broadcast: bool, **message: Any
    ) -> str:
        """Post `message` as a new reply in the thread; its ts."""
        resp = await self.services.client.chat_postMessage(
            channel=key.channel_id,
            thread_ts=key.thread_ts,
            **message,
            **identity,
            **shown_in_dm(broadcast),
            **NO_UNFURL,
        )
        return str(resp["ts"])

    async def delete(self, key: ThreadKey, message_ts: str) -> bool:
        """Delete our message `message_ts`: True when it is gone (deleted now or before),
        False when Slack kept it (the caller then writes into it instead)."""
        try:
            await self.services.client.chat_delete(channel=key.channel_id, ts=message_ts)
        except SlackApiError as exc:
            if exc.response.get("error") == "message_not_found":
                return True
            log.warning("message not deleted: %s", exc.response.get("error"))
            return False
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("message not deleted: %s", type(exc).__name__)
            return False
        return True

    async def replace_or_post(
        self,
        key: ThreadKey,
        message_ts: str | None,
        identity: dict[str, Any] | None = None,
        broadcast: bool = False,
        **message: Any,
    ) -> str:
        """Turn message `message_ts` (a placeholder, a stopped stream) into `message`, or
        post it when there is none (or it was deleted meanwhile); `identity` (a username)
        and `broadcast` only apply to a new post: the earlier message already shows where
        it was posted. Returns the ts of the message that shows it."""
        if message_ts is not None:
            try:
                await self.services.client.chat_update(
                    channel=key.channel_id, ts=message_ts, **message
                )
                return message_ts
            except SlackApiError as exc:
                if exc.response.get("error") != "message_not_found":
                    raise
        return await self.post(key, identity=identity or {}, broadcast=broadcast, **message)
