"""One message, end to end: thread -> session -> runner -> placeholder -> reply."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from agents.events import Event
from agents.metrics import REGISTRY
from bot.formatting import markdown_to_mrkdwn, split_message
from bot.messages import IncomingMessage
from bot.services import BotServices
from bot.slack_ui import (
    FAILURE_TEXT,
    INTERRUPTED_TEXT,
    THINKING_TEXT,
    continuation_blocks,
    notice_blocks,
    reply_blocks,
    thinking_blocks,
    transfer_line,
)
from storage.threads import ThreadKey

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What one invocation produced, reduced to what the thread shows."""

    reply: Event | None = None
    error: Event | None = None
    path: list[str] = field(default_factory=list)

    def observe(self, event: Event) -> None:
        if event.author != "user" and not self.path:
            self.path.append(event.author)
        target = event.actions.transfer_to_agent
        if target and (not self.path or self.path[-1] != target):
            self.path.append(target)
        if event.error_code:
            self.error = event
        elif event.author != "user" and event.is_final_response() and event.text:
            self.reply = event


def thread_key(msg: IncomingMessage) -> ThreadKey:
    return ThreadKey(team_id=msg.team_id, channel_id=msg.channel, thread_ts=msg.root_ts)


class Conversation:
    """Handles one accepted message inside its thread's ordered queue."""

    def __init__(self, services: BotServices) -> None:
        self.s = services

    async def handle(self, msg: IncomingMessage) -> None:
        """Decide whether to answer, then run the invocation and post the reply."""
        db, key = self.s.db, thread_key(msg)
        record = await db.threads.get(key)
        if not self._should_answer(msg, record):
            return
        message_key = f"message:{msg.team_id}:{msg.channel}:{msg.ts}"
        if not await db.deliveries.first_delivery(message_key, now=time.time()):
            REGISTRY.inc("support_bot_duplicate_deliveries_total", layer="database")
            return
        record = await self._ensure_thread(key, msg, record)
        await self._answer(key, msg, record)

    def _should_answer(self, msg: IncomingMessage, record: Any) -> bool:
        if msg.is_dm or msg.mentioned:
            return True
        return record is not None and record.status == "active"

    async def _ensure_thread(self, key: ThreadKey, msg: IncomingMessage, record: Any) -> Any:
        db, now = self.s.db, time.time()
        app_name = self.s.settings.app_name
        if record is None:
            record = await db.threads.create(
                key, session_id=uuid.uuid4().hex, app_name=app_name, user_id=msg.user, now=now
            )
        elif record.status != "active":
            # A mention brings a handed-off (or closed) thread back to the bot.
            await db.threads.set_status(key, "active")
        session = await db.sessions.get_session(
            app_name=record.app_name, user_id=record.user_id, session_id=record.session_id
        )
        if session is None:
            await db.sessions.create_session(
                app_name=record.app_name, user_id=record.user_id, session_id=record.session_id
            )
        return record

    async def _answer(self, key: ThreadKey, msg: IncomingMessage, record: Any) -> None:
        placeholder_ts: str | None = None
        outcome = Outcome()
        try:
            placeholder_ts = await self._post_placeholder(key)
            async for event in self.s.runner.run_async(
                user_id=record.user_id,
                session_id=record.session_id,
                message=msg.text,
                slack_ts=msg.ts,
                reply_slack_ts=placeholder_ts,
            ):
                outcome.observe(event)
        except asyncio.CancelledError:
            await asyncio.shield(self._fail(key, placeholder_ts, "interrupted", INTERRUPTED_TEXT))
            raise
        except Exception:
            log.exception("invocation failed", extra={"slack_thread": key.thread_ts})
            await self._fail(key, placeholder_ts, "bot_error", FAILURE_TEXT)
            return
        if outcome.error is not None or outcome.reply is None:
            code = outcome.error.error_code if outcome.error else "no_reply"
            await self._fail(key, placeholder_ts, code or "error", FAILURE_TEXT)
            return
        await self._post_reply(key, placeholder_ts, outcome)
        await self.s.db.threads.touch(key, now=time.time(), owner_agent=outcome.reply.author)

    async def _post_placeholder(self, key: ThreadKey) -> str:
        resp = await self.s.client.chat_postMessage(
            channel=key.channel_id,
            thread_ts=key.thread_ts,
            text=THINKING_TEXT,
            blocks=thinking_blocks(),
        )
        return str(resp["ts"])

    def _identity(self, agent: str) -> dict[str, Any]:
        return {"username": agent} if self.s.settings.chat_write_customize else {}

    async def _post_reply(
        self, key: ThreadKey, placeholder_ts: str | None, outcome: Outcome
    ) -> None:
        assert outcome.reply is not None
        agent = outcome.reply.author
        transfers = outcome.path if len(outcome.path) > 1 else []
        chunks = split_message(
            markdown_to_mrkdwn(outcome.reply.text), self.s.settings.max_message_chars
        )
        fallback = f"{agent}: {chunks[0]}"
        if transfers:
            fallback += f" ({transfer_line(transfers)})"
        first = reply_blocks(chunks[0], agent=agent, transfers=transfers)
        identity = self._identity(agent)
        if placeholder_ts is not None:
            await self.s.client.chat_update(
                channel=key.channel_id, ts=placeholder_ts, text=fallback, blocks=first, **identity
            )
        else:
            await self.s.client.chat_postMessage(
                channel=key.channel_id,
                thread_ts=key.thread_ts,
                text=fallback,
                blocks=first,
                **identity,
            )
        for chunk in chunks[1:]:
            await self.s.client.chat_postMessage(
                channel=key.channel_id,
                thread_ts=key.thread_ts,
                text=chunk,
                blocks=continuation_blocks(chunk),
                **identity,
            )

    async def _fail(
        self, key: ThreadKey, placeholder_ts: str | None, reason: str, text: str
    ) -> None:
        """Tell the thread a person will follow up, and flag it; never raises."""
        REGISTRY.inc("support_bot_invocation_failures_total", reason=reason)
        try:
            await self.s.db.threads.flag(key, reason)
        except Exception:
            log.exception("could not flag thread", extra={"slack_thread": key.thread_ts})
        try:
            if placeholder_ts is not None:
                await self.s.client.chat_update(
                    channel=key.channel_id, ts=placeholder_ts, text=text, blocks=notice_blocks(text)
                )
            else:
                await self.s.client.chat_postMessage(
                    channel=key.channel_id, thread_ts=key.thread_ts, text=text
                )
        except Exception:
            log.exception("could not post failure notice", extra={"slack_thread": key.thread_ts})
