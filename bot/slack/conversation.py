"""One Slack message, end to end: thread -> session -> placeholder -> turn -> reply.

The turn itself (thread, session, runner, outcome) is `bot.threads.turn`'s, shared with
the terminal chat; this module adds what Slack shows around it: the "thinking"
placeholder, the reply as Block Kit in its place, and failure notices.

Every accepted message is tracked in `db.inflight` (see `storage.delivery.inflight`) from before
the HTTP ack until its thread has an answer, so a crash at any point leaves a row that
the next start-up finishes (`bot.slack.recovery`). Slack writes are retried patiently by
the client (`bot.slack.client`): a Slack outage delays a reply, it never loses one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from functools import partial
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError

from agents.events import new_invocation_id
from agents.metrics import REGISTRY
from agents.runner import find_agent_to_run
from bot.slack import dm_conversation
from bot.slack.assistant.panel import Panel
from bot.slack.assistant.status import TurnStatus
from bot.slack.message_ts import ReplyMessage, stamped, turn_metadata
from bot.slack.messages import IncomingMessage
from bot.slack.render.blocks import (
    BUSY_TEXT,
    FAILURE_TEXT,
    INTERRUPTED_TEXT,
    THINKING_TEXT,
    continuation_blocks,
    feedback_block,
    notice_blocks,
    reply_blocks,
    thinking_blocks,
    transfer_line,
)
from bot.slack.render.limits import NO_UNFURL, SECTION_TEXT
from bot.slack.render.mrkdwn import markdown_to_mrkdwn, split_message
from bot.slack.services import BotServices
from bot.slack.streaming import Opened, SlackStream, open_stream, reply_metadata
from bot.slack.timeline import workflow_steps
from bot.threads.turn import TurnOutcome, close_interrupted_calls, ensure_thread, run_turn
from storage.delivery.inflight import InflightKey, MessageTakenOverError
from storage.dm_conversations import DmPlacement
from storage.sessions import Write
from storage.threads import ThreadKey, ThreadRecord

log = logging.getLogger(__name__)


def _joined(msg: IncomingMessage, root: str) -> tuple[str, dict[str, Any]]:
    """The thread ts and stored record of `msg` placed in the DM conversation `root`."""
    joined = dataclasses.replace(msg, conversation_ts=root)
    return joined.root_ts, joined.to_record()


REGISTRY.describe(
    "support_bot_invocation_failures_total", "counter", "Messages answered with a failure notice"
)
REGISTRY.describe(
    "support_bot_busy_refusals_total", "counter", "Messages refused over a rate or queue cap"
)


def _thread(key: ThreadKey) -> dict[str, str]:
    return {"slack_thread": key.thread_ts}


def thread_key(msg: IncomingMessage) -> ThreadKey:
    return ThreadKey(team_id=msg.team_id, channel_id=msg.channel, thread_ts=msg.root_ts)


def inflight_key(msg: IncomingMessage) -> InflightKey:
    return InflightKey(team_id=msg.team_id, channel_id=msg.channel, message_ts=msg.ts)


def shown_in_dm(broadcast: bool) -> dict[str, Any]:
    """Arguments that also show a threaded post at the bottom of the DM, where a user who
    wrote there is looking (`IncomingMessage.shown_in_dm`)."""
    return {"reply_broadcast": True} if broadcast else {}


_ORDER_POLL_S = 0.1


class SlackReplier:
    """Answers one accepted Slack message inside its thread's ordered queue."""

    def __init__(self, services: BotServices) -> None:
        self.s = services
        self.panel = Panel(services)

    async def accept(
        self, msg: IncomingMessage, placement: DmPlacement | None = None
    ) -> IncomingMessage | None:
        """Durably take the message on (before the ack): the message as accepted (placed
        in its DM conversation by `placement`, a top-level DM's, in the same
        transaction), or None for a duplicate delivery."""

        db = self.s.db
        accepted = await db.inflight.accept(
            inflight_key(msg),
            thread_ts=msg.root_ts,
            message=msg.to_record(),
            delivery_key=f"message:{msg.team_id}:{msg.channel}:{msg.ts}",
            owner=self.s.owner,
            now=time.time(),
            keeps_dm_conversation=dm_conversation.keeps_conversation(msg),
            placement=None if placement is None else (placement, partial(_joined, msg)),
        )
        if not accepted:
            REGISTRY.inc("support_bot_duplicate_deliveries_total", layer="database")
            return None
        if placement is None:
            return msg
        return dataclasses.replace(msg, conversation_ts=db.dm_conversations.placed(placement))

    async def handle(self, msg: IncomingMessage) -> None:
        """Decide whether to answer, then run the invocation and post the reply.

        The thread's earlier unanswered messages go first, whichever process holds them,
        and the invocation runs under the thread's cross-process lock, so with several
        processes a thread still sees one invocation at a time, in order. Any failure
        here leaves a notice in the thread and clears the message.
        """
        key, tracked = thread_key(msg), inflight_key(msg)
        try:
            deadline = time.monotonic() + self.s.settings.thread_order_wait_seconds
            # The earlier message is another process's: nothing here can signal it, so poll.
            while not await self._decide_in_order(key, msg, deadline):  # noqa: ASYNC110
                await asyncio.sleep(_ORDER_POLL_S)
        except Exception:
            log.exception("message handling failed", extra=_thread(key))
            await self.fail(
                key, tracked, None, "bot_error", FAILURE_TEXT, broadcast=msg.shown_in_dm
            )

    async def _decide_in_order(self, key: ThreadKey, msg: IncomingMessage, deadline: float) -> bool:
        """Under the thread's lock, read the thread together with whether another process
        still has an earlier message of it unanswered (one read); False (lock given
        back) to wait for that message, until `deadline`."""
        db = self.s.db
        async with db.thread_locks.hold(key):
            check = await db.inflight.earlier_and_thread(inflight_key(msg), key, owner=self.s.owner)
            if check.earlier:
                if time.monotonic() < deadline:
                    return False
                log.warning("answering ahead of an earlier unanswered message")
            await self._decide(key, msg, check.thread, has_session=check.has_session)
        return True

    async def _decide(
        self,
        key: ThreadKey,
        msg: IncomingMessage,
        record: ThreadRecord | None,
        *,
        has_session: bool = False,
    ) -> None:
        db = self.s.db
        if not self._should_answer(msg, record):
            await db.inflight.finish(inflight_key(msg), owner=self.s.owner)
            return
        # A mention brings a handed-off (or closed) thread back to the bot.
        record = await ensure_thread(
            db,
            key,
            record,
            new_session_id=uuid.uuid4().hex,
            app_name=self.s.settings.app_name,
            user_id=msg.user,
            has_session=has_session,
        )
        status = self.panel.status_for(msg, record)
        try:
            await self._answer(key, msg, record, status)
        finally:
            self.panel.clear_later(msg, status)

    async def refuse_busy(self, msg: IncomingMessage) -> None:
        """Say "busy, try again shortly" in the message's thread and let it go (over the
        user's rate or the thread's queue cap); never raises."""
        REGISTRY.inc("support_bot_busy_refusals_total")
        key = thread_key(msg)
        try:
            await self.s.client.chat_postMessage(
                channel=key.channel_id,
                thread_ts=key.thread_ts,
                text=BUSY_TEXT,
                blocks=notice_blocks(BUSY_TEXT),
                **shown_in_dm(msg.shown_in_dm),
                **NO_UNFURL,
            )
        except Exception:
            log.exception("could not post busy notice", extra=_thread(key))
        try:
            await self.s.db.inflight.finish(inflight_key(msg), owner=self.s.owner)
        except Exception:
            log.exception("could not clear in-flight message", extra=_thread(key))

    def _should_answer(self, msg: IncomingMessage, record: ThreadRecord | None) -> bool:
        if msg.is_dm or msg.mentioned:
            return True
        return record is not None and record.status == "active"

    async def _answer(
        self, key: ThreadKey, msg: IncomingMessage, record: ThreadRecord, status: TurnStatus
    ) -> None:
        placeholder_ts: str | None = None
        stream: SlackStream | None = None
        tracked = inflight_key(msg)
        invocation_id = new_invocation_id()
        broadcast = msg.shown_in_dm
        reply = ReplyMessage()
        try:
            stream = await self._open_stream(
                key, msg, record, opened=partial(self._stream_opened, tracked, reply, status)
            )
            if stream is None:
                placeholder_ts = reply.ts = await self._post_placeholder(key, record, broadcast)
            status.start()
            outcome = await run_turn(
                self.s.runner,
                user_id=record.user_id,
                session_id=record.session_id,
                text=msg.text,
                invocation_id=invocation_id,
                metadata=turn_metadata(msg.ts, reply, outside_thread=msg.outside_mark),
                speaker=msg.user,
                listener=stream.observe if stream is not None else None,
                on_event=status.observe,
                with_user_event=self._started(tracked, invocation_id, placeholder_ts),
            )
        except MessageTakenOverError:
            # A peer took the message over (this process was thought dead): it answers.
            log.warning("message taken over by a peer", extra=_thread(key))
            await self._withdraw(key, reply.ts, stream)
            return
        except asyncio.CancelledError:
            interrupted = self._interrupted(key, tracked, reply.ts, record, stream, broadcast)
            await asyncio.shield(interrupted)
            raise
        except Exception:
            log.exception("invocation failed", extra={"slack_thread": key.thread_ts})
            await self.fail(
                key,
                tracked,
                reply.ts,
                "bot_error",
                FAILURE_TEXT,
                stream=stream,
                broadcast=broadcast,
                status=status,
            )
            return
        await self.conclude(
            key,
            tracked,
            reply.ts,
            outcome,
            stream=stream,
            broadcast=broadcast,
            status=status,
            record=record,
        )

    async def _stream_opened(
        self, tracked: InflightKey, reply: ReplyMessage, status: TurnStatus, ts: str
    ) -> None:
        """The reply's stream was just started as message `ts`: the answers stored from
        here on cite it, the panel's status went with it, and it is recorded for a
        recovery before anything more is sent."""
        reply.ts = ts
        status.replied()
        if not await self.s.db.inflight.set_stream(tracked, owner=self.s.owner, stream_ts=ts):
            raise MessageTakenOverError(f"message {tracked.message_ts} was taken over")

    def _started(
        self, tracked: InflightKey, invocation_id: str, placeholder_ts: str | None
    ) -> Write:
        """The message marked started (`InflightStore.start_in_append`) with the
        placeholder its reply goes into, for the transaction that stores the user's event
        (one commit); a takeover found there raises `MessageTakenOverError` from the turn.
        A stream's message is recorded once the reply's first content starts it."""
        return self.s.db.inflight.start_in_append(
            tracked,
            owner=self.s.owner,
            invocation_id=invocation_id,
            now=time.time(),
            placeholder_ts=placeholder_ts,
        )

    async def _withdraw(self, key: ThreadKey, ts: str | None, stream: SlackStream | None) -> None:
        """Take back the (empty) message a reply was to go into; never raises."""
        if stream is not None:
            await stream.stop(failed=False)
        if ts is None:
            return
        try:
            await self.s.client.chat_delete(channel=key.channel_id, ts=ts)
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
            log.warning("empty reply message not deleted: %s", type(exc).__name__)

    async def _open_stream(
        self, key: ThreadKey, msg: IncomingMessage, record: ThreadRecord, *, opened: Opened
    ) -> SlackStream | None:
        """The reply's stream (`bot.slack.streaming`), started with the reply's first
        content (`opened` then), unless `STREAMING=off` or Slack will not stream here:
        then None, and a placeholder is posted instead. A top-level DM's stream runs in
        its conversation's thread, as Slack's streams are always thread replies; a reply
        posted whole also shows at the bottom of the DM, as the placeholder flow's does."""
        settings = self.s.settings
        if settings.streaming == "off":
            return None
        return await open_stream(
            self.s.client,
            key,
            msg,
            identity=await self._expected_identity(record),
            limit=min(settings.max_message_chars, SECTION_TEXT),
            interval=settings.stream_append_seconds,
            steps=workflow_steps(self.s.runner.agent),
            opened=opened,
        )

    async def _interrupted(
        self,
        key: ThreadKey,
        tracked: InflightKey,
        placeholder_ts: str | None,
        record: ThreadRecord,
        stream: SlackStream | None,
        broadcast: bool,
    ) -> None:
        """A cancelled turn (shutdown): answer its open tool calls, then tell the thread."""
        try:
            await close_interrupted_calls(self.s.db, record)
        except Exception:
            log.exception("could not close interrupted calls", extra=_thread(key))
        await self.fail(
            key,
            tracked,
            placeholder_ts,
            "interrupted",
            INTERRUPTED_TEXT,
            stream=stream,
            broadcast=broadcast,
        )

    async def conclude(
        self,
        key: ThreadKey,
        tracked: InflightKey,
        placeholder_ts: str | None,
        outcome: TurnOutcome,
        *,
        stream: SlackStream | None = None,
        broadcast: bool = False,
        status: TurnStatus | None = None,
        record: ThreadRecord | None = None,
    ) -> None:
        """Post what the invocation produced (its reply, or a failure notice); with a
        `stream`, `placeholder_ts` is its message (None until it was started), finished
        or rewritten in place; with `broadcast`, new posts also show at the bottom of the
        DM. A reply that reached Slack as a new message is stored with its ts, in the
        transaction that finishes the message (the session of `record`)."""
        if outcome.reply is None or not outcome.answered:
            await self.fail(
                key,
                tracked,
                placeholder_ts,
                outcome.failure,
                FAILURE_TEXT,
                stream=stream,
                broadcast=broadcast,
                status=status,
            )
            return
        posted: str | None = None
        try:
            finished = stream is not None and await stream.finish(outcome.reply, outcome.transfers)
            if stream is not None and stream.ts is not None:
                # Its message, started during the turn or by the flush the finish awaited.
                placeholder_ts = stream.ts
            if not finished:
                posted = await self._post_reply(key, placeholder_ts, outcome, broadcast)
        except MessageTakenOverError:
            # Found as the stream started (`_stream_opened`): the peer answers.
            log.warning("message taken over by a peer", extra=_thread(key))
            await self._withdraw(key, stream.ts if stream is not None else None, stream)
            return
        except Exception:
            # The reply is stored but Slack would not take it: tell the thread if we can.
            log.exception("could not post reply", extra={"slack_thread": key.thread_ts})
            await self.fail(
                key,
                tracked,
                placeholder_ts,
                "slack_error",
                FAILURE_TEXT,
                broadcast=broadcast,
                status=status,
            )
            return
        if posted is not None and posted != placeholder_ts and status is not None:
            status.replied()
        # The reply's message, for an answer stored before it was known (a reply posted
        # whole, or a stream started by the reply's last event).
        shown = posted or placeholder_ts
        reply = stamped(outcome.reply, shown) if shown else None
        also = None
        if reply is not None and record is not None:
            also = self.s.db.sessions.rewrite_in(record, reply)
        await self.s.db.inflight.finish_answered(
            tracked,
            key,
            owner=self.s.owner,
            now=time.time(),
            owner_agent=outcome.reply.author,
            also=also,
        )

    async def _post_placeholder(
        self, key: ThreadKey, record: ThreadRecord, broadcast: bool
    ) -> str | None:
        """The "thinking" message, or None when Slack will not take it right now (the
        reply is then posted as a new message instead of replacing it)."""
        try:
            identity = await self._expected_identity(record)
            resp = await self.s.client.chat_postMessage(
                channel=key.channel_id,
                thread_ts=key.thread_ts,
                text=THINKING_TEXT,
                blocks=thinking_blocks(),
                **identity,
                **shown_in_dm(broadcast),
                **NO_UNFURL,
            )
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
            log.warning("placeholder not posted: %s", type(exc).__name__)
            return None
        return str(resp["ts"])

    def _identity(self, agent: str) -> dict[str, Any]:
        return {"username": agent} if self.s.settings.chat_write_customize else {}

    async def _expected_identity(self, record: ThreadRecord) -> dict[str, Any]:
        """The placeholder's username: the agent the runner will give this message to.

        chat.update takes no username, so the name a reply shows is the one its
        placeholder was posted under; a transfer shows in the reply's context line.
        """
        if not self.s.settings.chat_write_customize:
            return {}
        session = await self.s.db.sessions.of_thread(record, since_compaction=True)
        root = self.s.runner.agent
        agent = find_agent_to_run(session, root) if session is not None else root
        return self._identity(agent.name)

    async def _replace_or_post(
        self,
        key: ThreadKey,
        placeholder_ts: str | None,
        identity: dict[str, Any] | None = None,
        broadcast: bool = False,
        **message: Any,
    ) -> str:
        """Turn the placeholder into `message`, or post it when there is none (or the
        placeholder was deleted meanwhile); `identity` (a username) and `broadcast` only
        apply to a new post: the placeholder already shows where it was posted. Returns
        the ts of the message that shows it."""
        client = self.s.client
        if placeholder_ts is not None:
            try:
                await client.chat_update(channel=key.channel_id, ts=placeholder_ts, **message)
                return placeholder_ts
            except SlackApiError as exc:
                if exc.response.get("error") != "message_not_found":
                    raise
        resp = await client.chat_postMessage(
            channel=key.channel_id,
            thread_ts=key.thread_ts,
            **message,
            **(identity or {}),
            **shown_in_dm(broadcast),
            **NO_UNFURL,
        )
        return str(resp["ts"])

    async def _post_reply(
        self, key: ThreadKey, placeholder_ts: str | None, outcome: TurnOutcome, broadcast: bool
    ) -> str:
        """Show the reply (in the placeholder, or as new messages); the ts of its first."""
        assert outcome.reply is not None
        agent = outcome.reply.author
        transfers = outcome.transfers
        limit = min(self.s.settings.max_message_chars, SECTION_TEXT)
        chunks = split_message(markdown_to_mrkdwn(outcome.reply.text), limit)
        fallback = f"{agent}: {chunks[0]}"
        if transfers:
            fallback += f" ({transfer_line(transfers)})"
        # The feedback buttons close the reply: under its last message.
        feedback = [feedback_block(outcome.reply.id)]
        first = reply_blocks(chunks[0], agent=agent, transfers=transfers)
        first += feedback if len(chunks) == 1 else []
        identity = self._identity(agent)
        shown = await self._replace_or_post(
            key,
            placeholder_ts,
            identity,
            broadcast,
            text=fallback,
            blocks=first,
            metadata=reply_metadata(agent, outcome.reply.invocation_id),
        )
        for n, chunk in enumerate(chunks[1:], start=2):
            await self.s.client.chat_postMessage(
                channel=key.channel_id,
                thread_ts=key.thread_ts,
                text=chunk,
                blocks=continuation_blocks(chunk) + (feedback if n == len(chunks) else []),
                **identity,
                **shown_in_dm(broadcast),
                **NO_UNFURL,
            )
        return shown

    async def fail(
        self,
        key: ThreadKey,
        tracked: InflightKey,
        placeholder_ts: str | None,
        reason: str,
        text: str,
        *,
        stream: SlackStream | None = None,
        broadcast: bool = False,
        status: TurnStatus | None = None,
    ) -> None:
        """Tell the thread a person will follow up, and flag it; never raises.

        A `stream` is stopped first and its message (if it was started) becomes the
        notice. The message stays in flight when the notice could not be posted, so the
        next start-up tries again.
        """
        REGISTRY.inc("support_bot_invocation_failures_total", reason=reason)
        if stream is not None:
            await stream.stop(failed=True)
        try:
            await self.s.db.threads.flag(key, reason)
        except Exception:
            log.exception("could not flag thread", extra={"slack_thread": key.thread_ts})
        try:
            shown = await self._replace_or_post(
                key, placeholder_ts, None, broadcast, text=text, blocks=notice_blocks(text)
            )
        except Exception:
            log.exception("could not post failure notice", extra={"slack_thread": key.thread_ts})
            return
        if status is not None and shown != placeholder_ts:
            status.replied()
        try:
            await self.s.db.inflight.finish(tracked, owner=self.s.owner)
        except Exception:
            log.exception("could not clear in-flight message", extra=_thread(key))
