"""One message, end to end: thread -> session -> runner -> placeholder -> reply.

Every accepted message is tracked in `db.inflight` (see `storage.inflight`) from before
the HTTP ack until its thread has an answer, so a crash at any point leaves a row that
the next start-up finishes (`bot.slack.recovery`). Slack writes are retried patiently: a
Slack outage delays a reply, it never loses one.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError

from agents.events import Event, new_invocation_id
from agents.metrics import REGISTRY
from bot.slack.blocks import (
    FAILURE_TEXT,
    INTERRUPTED_TEXT,
    THINKING_TEXT,
    continuation_blocks,
    notice_blocks,
    reply_blocks,
    thinking_blocks,
    transfer_line,
)
from bot.slack.message_ts import turn_metadata
from bot.slack.messages import IncomingMessage
from bot.slack.mrkdwn import markdown_to_mrkdwn, split_message
from bot.slack.services import BotServices
from storage.inflight import InflightKey
from storage.threads import ThreadKey

log = logging.getLogger(__name__)

# Beyond slack_sdk's own retries: how often, and how patiently, a reply is re-sent while
# Slack answers 429 or 5xx or cannot be reached (about a minute and a half in all).
DELIVERY_ATTEMPTS = 7
DELIVERY_BACKOFF_S = 1.0
DELIVERY_MAX_WAIT_S = 30.0
_RETRYABLE_SLACK_ERRORS = {"ratelimited", "fatal_error", "internal_error", "service_unavailable"}


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


def _thread(key: ThreadKey) -> dict[str, str]:
    return {"slack_thread": key.thread_ts}


def thread_key(msg: IncomingMessage) -> ThreadKey:
    return ThreadKey(team_id=msg.team_id, channel_id=msg.channel, thread_ts=msg.root_ts)


def inflight_key(msg: IncomingMessage) -> InflightKey:
    return InflightKey(team_id=msg.team_id, channel_id=msg.channel, message_ts=msg.ts)


def _retry_delay(exc: Exception, attempt: int) -> float | None:
    """Seconds to wait before re-sending after `exc`, or None when retrying cannot help."""
    backoff = min(DELIVERY_BACKOFF_S * 2 ** (attempt - 1), DELIVERY_MAX_WAIT_S)
    if isinstance(exc, aiohttp.ClientError | TimeoutError):
        return backoff
    if not isinstance(exc, SlackApiError):
        return None
    response = exc.response
    status = getattr(response, "status_code", 200)
    if status == 429:
        retry_after = (getattr(response, "headers", None) or {}).get("Retry-After", "")
        return min(float(retry_after), DELIVERY_MAX_WAIT_S) if retry_after.isdigit() else backoff
    if status >= 500 or response.get("error") in _RETRYABLE_SLACK_ERRORS:
        return backoff
    return None


async def deliver(call: Callable[[], Awaitable[Any]], *, what: str) -> Any:
    """Run a Slack write, re-sending it while the failure is transient."""
    for attempt in range(1, DELIVERY_ATTEMPTS + 1):
        try:
            return await call()
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
            delay = _retry_delay(exc, attempt)
            if delay is None or attempt == DELIVERY_ATTEMPTS:
                raise
            REGISTRY.inc("support_bot_slack_redeliveries_total", call=what)
            log.warning("%s failed (%s); retrying in %.1fs", what, type(exc).__name__, delay)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")


class Conversation:
    """Handles one accepted message inside its thread's ordered queue."""

    def __init__(self, services: BotServices) -> None:
        self.s = services

    async def accept(self, msg: IncomingMessage) -> bool:
        """Durably take the message on (before the ack): False for a duplicate delivery."""
        accepted = await self.s.db.inflight.accept(
            inflight_key(msg),
            thread_ts=msg.root_ts,
            message=msg.to_record(),
            delivery_key=f"message:{msg.team_id}:{msg.channel}:{msg.ts}",
            owner=self.s.owner,
            now=time.time(),
        )
        if not accepted:
            REGISTRY.inc("support_bot_duplicate_deliveries_total", layer="database")
        return bool(accepted)

    async def handle(self, msg: IncomingMessage) -> None:
        """Decide whether to answer, then run the invocation and post the reply."""
        db, key = self.s.db, thread_key(msg)
        record = await db.threads.get(key)
        if not self._should_answer(msg, record):
            await db.inflight.finish(inflight_key(msg))
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
        tracked = inflight_key(msg)
        invocation_id = new_invocation_id()
        try:
            await self.s.db.inflight.start(tracked, invocation_id=invocation_id, now=time.time())
            placeholder_ts = await self._post_placeholder(key)
            if placeholder_ts is not None:
                await self.s.db.inflight.set_placeholder(tracked, placeholder_ts)
            async for event in self.s.runner.run_async(
                user_id=record.user_id,
                session_id=record.session_id,
                message=msg.text,
                custom_metadata=turn_metadata(msg.ts, placeholder_ts),
                invocation_id=invocation_id,
            ):
                outcome.observe(event)
        except asyncio.CancelledError:
            await asyncio.shield(
                self.fail(key, tracked, placeholder_ts, "interrupted", INTERRUPTED_TEXT)
            )
            raise
        except Exception:
            log.exception("invocation failed", extra={"slack_thread": key.thread_ts})
            await self.fail(key, tracked, placeholder_ts, "bot_error", FAILURE_TEXT)
            return
        await self.conclude(key, tracked, placeholder_ts, outcome)

    async def conclude(
        self, key: ThreadKey, tracked: InflightKey, placeholder_ts: str | None, outcome: Outcome
    ) -> None:
        """Post what the invocation produced (its reply, or a failure notice)."""
        if outcome.error is not None or outcome.reply is None:
            code = outcome.error.error_code if outcome.error else "no_reply"
            await self.fail(key, tracked, placeholder_ts, code or "error", FAILURE_TEXT)
            return
        try:
            await self._post_reply(key, placeholder_ts, outcome)
        except Exception:
            # The reply is stored but Slack would not take it: tell the thread if we can.
            log.exception("could not post reply", extra={"slack_thread": key.thread_ts})
            await self.fail(key, tracked, placeholder_ts, "slack_error", FAILURE_TEXT)
            return
        await self.s.db.inflight.finish(tracked)
        await self.s.db.threads.touch(key, now=time.time(), owner_agent=outcome.reply.author)

    async def _post_placeholder(self, key: ThreadKey) -> str | None:
        """The "thinking" message, or None when Slack will not take it right now (the
        reply is then posted as a new message instead of replacing it)."""
        try:
            resp = await self.s.client.chat_postMessage(
                channel=key.channel_id,
                thread_ts=key.thread_ts,
                text=THINKING_TEXT,
                blocks=thinking_blocks(),
            )
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
            log.warning("placeholder not posted: %s", type(exc).__name__)
            return None
        return str(resp["ts"])

    def _identity(self, agent: str) -> dict[str, Any]:
        return {"username": agent} if self.s.settings.chat_write_customize else {}

    async def _replace_or_post(
        self, key: ThreadKey, placeholder_ts: str | None, **message: Any
    ) -> None:
        """Turn the placeholder into `message`, or post it when there is none (or the
        placeholder was deleted meanwhile)."""
        client = self.s.client
        if placeholder_ts is not None:
            try:
                await deliver(
                    lambda: client.chat_update(
                        channel=key.channel_id, ts=placeholder_ts, **message
                    ),
                    what="chat.update",
                )
                return
            except SlackApiError as exc:
                if exc.response.get("error") != "message_not_found":
                    raise
        await deliver(
            lambda: client.chat_postMessage(
                channel=key.channel_id, thread_ts=key.thread_ts, **message
            ),
            what="chat.postMessage",
        )

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
        await self._replace_or_post(key, placeholder_ts, text=fallback, blocks=first, **identity)
        for chunk in chunks[1:]:
            await deliver(
                lambda chunk=chunk: self.s.client.chat_postMessage(  # type: ignore[misc]
                    channel=key.channel_id,
                    thread_ts=key.thread_ts,
                    text=chunk,
                    blocks=continuation_blocks(chunk),
                    **identity,
                ),
                what="chat.postMessage",
            )

    async def fail(
        self,
        key: ThreadKey,
        tracked: InflightKey,
        placeholder_ts: str | None,
        reason: str,
        text: str,
    ) -> None:
        """Tell the thread a person will follow up, and flag it; never raises.

        The message stays in flight when the notice could not be posted, so the next
        start-up tries again.
        """
        REGISTRY.inc("support_bot_invocation_failures_total", reason=reason)
        try:
            await self.s.db.threads.flag(key, reason)
        except Exception:
            log.exception("could not flag thread", extra={"slack_thread": key.thread_ts})
        try:
            await self._replace_or_post(key, placeholder_ts, text=text, blocks=notice_blocks(text))
        except Exception:
            log.exception("could not post failure notice", extra={"slack_thread": key.thread_ts})
            return
        try:
            await self.s.db.inflight.finish(tracked)
        except Exception:
            log.exception("could not clear in-flight message", extra=_thread(key))
