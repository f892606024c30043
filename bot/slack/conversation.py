"""One Slack message, end to end: accepted, ordered in its thread, decided, answered.

`SlackReplier` is the entry the listeners call: `accept` (before the HTTP ack), `handle`
(in the thread's queue), `refuse_busy`. The turn itself (thread, session, runner,
outcome) is `bot.threads.turn`'s, shared with the terminal chat; what Slack shows around
it is in its own rooms: the placeholder or stream and the reply
(`bot.slack.reply_posting`), and the notices when there is no reply
(`bot.slack.reply_failures`).

Every accepted message is tracked in `db.inflight` (see `storage.delivery.inflight`) from
before the HTTP ack until its thread has an answer, so a crash at any point leaves a row
that the next start-up finishes (`bot.slack.recovery`). Slack writes are retried
patiently by the client (`bot.slack.client`): a Slack outage delays a reply, it never
loses one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from functools import partial
from typing import Any

from agents.events import new_invocation_id
from agents.metrics import REGISTRY
from bot.slack import dm_conversation
from bot.slack.assistant.panel import Panel
from bot.slack.assistant.status import TurnStatus
from bot.slack.message_ts import ReplyMessage, turn_metadata
from bot.slack.messages import IncomingMessage
from bot.slack.render.blocks import FAILURE_TEXT
from bot.slack.reply_failures import ReplyFailures
from bot.slack.reply_posting import ReplyPosting
from bot.slack.services import BotServices
from bot.slack.streaming import SlackStream
from bot.slack.thread_posts import ThreadPosts, thread_extra
from bot.threads.turn import ensure_thread, run_turn
from storage.delivery.inflight import InflightKey, MessageTakenOverError
from storage.dm_conversations import DmPlacement
from storage.threads import ThreadKey, ThreadRecord

log = logging.getLogger(__name__)

_ORDER_POLL_S = 0.1


def thread_key(msg: IncomingMessage) -> ThreadKey:
    """The thread `msg` belongs to (its DM conversation's, for a DM message)."""
    return ThreadKey(team_id=msg.team_id, channel_id=msg.channel, thread_ts=msg.root_ts)


def inflight_key(msg: IncomingMessage) -> InflightKey:
    """`msg`'s row in `db.inflight`."""
    return InflightKey(team_id=msg.team_id, channel_id=msg.channel, message_ts=msg.ts)


def _joined(msg: IncomingMessage, root: str) -> tuple[str, dict[str, Any]]:
    """The thread ts and stored record of `msg` placed in the DM conversation `root`."""
    joined = dataclasses.replace(msg, conversation_ts=root)
    return joined.root_ts, joined.to_record()


class SlackReplier:
    """Answers one accepted Slack message inside its thread's ordered queue."""

    def __init__(self, services: BotServices) -> None:
        self.services = services
        self.panel = Panel(services)
        posts = ThreadPosts(services)
        self.failures = ReplyFailures(services, posts)
        self.posting = ReplyPosting(services, posts, self.failures)

    async def accept(
        self, msg: IncomingMessage, placement: DmPlacement | None = None
    ) -> IncomingMessage | None:
        """Durably take the message on (before the ack): the message as accepted (placed
        in its DM conversation by `placement`, a top-level DM's, in the same
        transaction), or None for a duplicate delivery."""

        db = self.services.db
        accepted = await db.inflight.accept(
            inflight_key(msg),
            thread_ts=msg.root_ts,
            message=msg.to_record(),
            delivery_key=f"message:{msg.team_id}:{msg.channel}:{msg.ts}",
            owner=self.services.owner,
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
        key = thread_key(msg)
        try:
            deadline = time.monotonic() + self.services.settings.thread_order_wait_seconds
            # The earlier message is another process's: nothing here can signal it, so poll.
            while not await self._decide_in_order(key, msg, deadline):  # noqa: ASYNC110
                await asyncio.sleep(_ORDER_POLL_S)
        except Exception:
            log.exception("message handling failed", extra=thread_extra(key))
            await self.failures.fail(
                key, inflight_key(msg), None, "bot_error", FAILURE_TEXT, broadcast=msg.shown_in_dm
            )

    async def refuse_busy(self, msg: IncomingMessage) -> None:
        """Say "busy, try again shortly" in the message's thread and let it go (over the
        user's rate or the thread's queue cap); never raises."""
        await self.failures.refuse_busy(
            thread_key(msg), inflight_key(msg), broadcast=msg.shown_in_dm
        )

    async def _decide_in_order(self, key: ThreadKey, msg: IncomingMessage, deadline: float) -> bool:
        """Under the thread's lock, read the thread together with whether another process
        still has an earlier message of it unanswered (one read); False (lock given
        back) to wait for that message, until `deadline`."""
        db, owner = self.services.db, self.services.owner
        async with db.thread_locks.hold(key):
            check = await db.inflight.earlier_and_thread(inflight_key(msg), key, owner=owner)
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
        """Answer `msg` when it is addressed to the bot (a DM, a mention) or its thread is
        the bot's; else let it go."""
        db = self.services.db
        if not (msg.is_dm or msg.mentioned or (record is not None and record.status == "active")):
            await db.inflight.finish(inflight_key(msg), owner=self.services.owner)
            return
        # A mention brings a handed-off (or closed) thread back to the bot.
        record = await ensure_thread(
            db,
            key,
            record,
            new_session_id=uuid.uuid4().hex,
            app_name=self.services.settings.app_name,
            user_id=msg.user,
            has_session=has_session,
        )
        status = self.panel.status_for(msg, record)
        try:
            await self._answer(key, msg, record, status)
        finally:
            self.panel.clear_later(msg, status)

    async def _answer(
        self, key: ThreadKey, msg: IncomingMessage, record: ThreadRecord, status: TurnStatus
    ) -> None:
        """Run the turn with its reply's message ready (a stream, else a placeholder),
        then post what it produced."""
        stream: SlackStream | None = None
        tracked = inflight_key(msg)
        invocation_id = new_invocation_id()
        broadcast = msg.shown_in_dm
        reply = ReplyMessage()
        posting = self.posting
        try:
            stream = await posting.open_stream(
                key, msg, tracked=tracked, reply=reply, status=status
            )
            if stream is None:
                reply.ts = await posting.placeholder(key, broadcast)
            status.start()
            outcome = await run_turn(
                self.services.runner,
                user_id=record.user_id,
                session_id=record.session_id,
                text=msg.text,
                invocation_id=invocation_id,
                metadata=turn_metadata(msg.ts, reply, outside_thread=msg.outside_mark),
                speaker=msg.user,
                listener=stream.observe if stream is not None else None,
                on_event=status.observe,
                # Started, with the placeholder its reply goes into, in the transaction
                # that stores the user's event (one commit); a takeover found there
                # raises MessageTakenOverError. A stream's message is recorded once the
                # reply's first content starts it.
                with_user_event=self.services.db.inflight.start_in_append(
                    tracked,
                    owner=self.services.owner,
                    invocation_id=invocation_id,
                    now=time.time(),
                    placeholder_ts=reply.ts,
                ),
            )
        except MessageTakenOverError:
            # A peer took the message over (this process was thought dead): it answers.
            await self.failures.withdraw(key, reply.ts, stream)
            return
        except asyncio.CancelledError:
            interrupted = self.failures.interrupted(
                key, tracked, reply.ts, record, stream=stream, broadcast=broadcast
            )
            await asyncio.shield(interrupted)
            raise
        except Exception:
            log.exception("invocation failed", extra=thread_extra(key))
            await self.failures.fail(
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
        await posting.conclude(
            key,
            tracked,
            reply.ts,
            outcome,
            stream=stream,
            broadcast=broadcast,
            status=status,
            record=record,
        )
