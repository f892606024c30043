"""Showing a reply in its Slack thread, and recording that it was shown.

Before the turn: the reply's stream (`bot.slack.streaming`), started by the reply's
first content and recorded as it starts, or, where there is no stream, the "thinking"
placeholder, under the bot's own name: who will own the reply is known only once the
turn has run. After it (`conclude`): the stream finished with the reply, or the reply as
Block Kit in the placeholder (or stopped stream), or as a new message, a long one
continued in the thread; then the message is finished in the transaction that stores
the reply with the Slack message it was shown as. A turn without a reply, or a reply
Slack would not take, goes to `bot.slack.reply_failures`.

A reply is shown and recorded as the agent that owns it (`agents.runner.reply_owner`):
its writer, or for a pipeline's step (`fix_writer`) the workflow agent it runs in
(`tech_support`), since a step never owns a conversation. With `CHAT_WRITE_CUSTOMIZE`
the message carries that owner's username; `chat.update` takes no username, so a
message posted under another name (the neutral placeholder, a stream started by another
agent) is deleted and the reply posted anew under its owner. A crash between the two
leaves no placeholder, and the recovery then finds the reply by its invocation
(`bot.slack.recovery`), so the thread never gets it twice.
"""

from __future__ import annotations

import logging
import time
from functools import partial

import aiohttp
from slack_sdk.errors import SlackApiError

from agents.events import SHOWN_BEFORE, Event
from agents.knowledge.reply_check import reply_sources
from agents.runner import reply_owner_name
from bot.slack.assistant.status import TurnStatus
from bot.slack.message_ts import SLACK_TS, ReplyMessage
from bot.slack.message_ts import message_ts as posted_as
from bot.slack.messages import IncomingMessage
from bot.slack.render.blocks import (
    FAILURE_TEXT,
    THINKING_TEXT,
    continuation_blocks,
    feedback_block,
    reply_blocks,
    thinking_blocks,
    transfer_line,
)
from bot.slack.render.limits import SECTION_TEXT
from bot.slack.render.mrkdwn import markdown_to_mrkdwn, split_message
from bot.slack.render.sources import sources_blocks
from bot.slack.reply_failures import ReplyFailures
from bot.slack.services import BotServices
from bot.slack.streaming import SlackStream, open_stream, reply_metadata
from bot.slack.thread_posts import ThreadPosts, thread_extra
from bot.slack.timeline import tree_names, workflow_steps
from bot.threads.turn import TurnOutcome
from storage.delivery.inflight import InflightKey, MessageTakenOverError
from storage.threads import ThreadKey, ThreadRecord

log = logging.getLogger(__name__)


class ReplyPosting:
    """Puts a turn's reply into its thread: the message it goes into, then the reply."""

    def __init__(self, services: BotServices, posts: ThreadPosts, failures: ReplyFailures):
        self.services = services
        self.posts = posts
        self.failures = failures

    def _limit(self) -> int:
        """The most text one reply message holds."""
        return min(self.services.settings.max_message_chars, SECTION_TEXT)

    async def open_stream(
        self,
        key: ThreadKey,
        msg: IncomingMessage,
        *,
        tracked: InflightKey,
        reply: ReplyMessage,
        status: TurnStatus,
    ) -> SlackStream | None:
        """The reply's stream, started with the reply's first text, unless
        `STREAMING=off` or Slack will not stream here: then None, and a placeholder is
        posted instead. A top-level DM's stream runs in its conversation's thread, as
        Slack's streams are always thread replies; a reply posted whole also shows at
        the bottom of the DM, as the placeholder flow's does."""
        settings = self.services.settings
        if settings.streaming == "off":
            return None
        return await open_stream(
            self.services.client,
            key,
            msg,
            identity=self.posts.identity,
            owner_of=self.owner_of,
            limit=self._limit(),
            interval=settings.stream_append_seconds,
            steps=workflow_steps(self.services.runner.agent),
            names=tree_names(self.services.runner.agent),
            opened=partial(self._stream_opened, tracked, reply, status),
        )

    async def _stream_opened(
        self, tracked: InflightKey, reply: ReplyMessage, status: TurnStatus, ts: str
    ) -> None:
        """The reply's stream was just started as message `ts`: the answers stored from
        here on cite it, the panel's status went with it, and it is recorded for a
        recovery before anything more is sent."""
        reply.ts = ts
        status.replied()
        db, owner = self.services.db, self.services.owner
        if not await db.inflight.set_stream(tracked, owner=owner, stream_ts=ts):
            raise MessageTakenOverError(f"message {tracked.message_ts} was taken over")

    def owner_of(self, author: str) -> str:
        """The agent a reply written by `author` is shown and recorded as."""
        return reply_owner_name(self.services.runner.agent, author)

    async def placeholder(self, key: ThreadKey, broadcast: bool) -> str | None:
        """The "thinking" message, under the bot's own name (no agent owns the reply
        yet), or None when Slack will not take it right now (the reply is then posted as
        a new message instead of replacing it)."""
        try:
            return await self.posts.post(
                key,
                identity={},
                broadcast=broadcast,
                text=THINKING_TEXT,
                blocks=thinking_blocks(),
            )
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
            log.warning("placeholder not posted: %s", type(exc).__name__)
            return None

    async def conclude(
        self,
        key: ThreadKey,
        tracked: InflightKey,
        message_ts: str | None,
        outcome: TurnOutcome,
        *,
        stream: SlackStream | None = None,
        broadcast: bool = False,
        status: TurnStatus | None = None,
        record: ThreadRecord | None = None,
    ) -> None:
        """Post what the invocation produced (its reply, or a failure notice) into
        message `message_ts` (a placeholder; with a `stream`, its message, None until it
        was started), finished or rewritten in place; with `broadcast`, new posts also
        show at the bottom of the DM. A reply that reached Slack as a new message is
        stored with its ts, in the transaction that finishes the message (the session of
        `record`)."""
        if outcome.reply is None or not outcome.answered:
            if stream is not None and outcome.error is not None and record is not None:
                await self._record_replaced(record, outcome.error, stream)
            await self.failures.fail(
                key,
                tracked,
                message_ts,
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
            shown_as = None  # the placeholder's name: the bot's own
            if stream is not None and stream.ts is not None:
                # Its message, started during the turn or by the flush the finish awaited.
                message_ts, shown_as = stream.ts, stream.speaker
            if not finished:
                posted = await self.post_reply(key, message_ts, outcome, broadcast, shown_as)
        except MessageTakenOverError:
            # Found as the stream started (`_stream_opened`): the peer answers.
            await self.failures.withdraw(key, stream.ts if stream is not None else None, stream)
            return
        except Exception:
            # The reply is stored but Slack would not take it: tell the thread if we can.
            log.exception("could not post reply", extra=thread_extra(key))
            await self.failures.fail(
                key,
                tracked,
                message_ts,
                "slack_error",
                FAILURE_TEXT,
                broadcast=broadcast,
                status=status,
            )
            return
        if posted is not None and posted != message_ts and status is not None:
            status.replied()
        # The reply's message, for an answer stored before it was known (a reply posted
        # whole, or a stream started by the reply's last event) or stored with a message
        # the reply was not shown in after all (a placeholder or stream deleted to post
        # the reply under its owner's name), and what the customer had been shown first.
        shown = posted or message_ts
        completed: dict[str, str] = {}
        if shown and posted_as(outcome.reply) != shown:
            completed[SLACK_TS] = shown
        replaced = stream.replaced(outcome.reply) if stream is not None and not finished else ""
        if replaced:
            completed[SHOWN_BEFORE] = replaced
        also = None
        if completed and record is not None:
            reply = outcome.reply.with_metadata(**completed)
            also = self.services.db.sessions.rewrite_in(record, reply)
        await self.services.db.inflight.finish_answered(
            tracked,
            key,
            owner=self.services.owner,
            now=time.time(),
            owner_agent=self.owner_of(outcome.reply.author),
            also=also,
        )

    async def _record_replaced(
        self, record: ThreadRecord, event: Event, stream: SlackStream
    ) -> None:
        """Store with `event` (a failure that ends the turn) the draft the customer had
        been shown before it, if any (`SHOWN_BEFORE`), so summaries know what they saw."""
        replaced = stream.replaced(None)
        if not replaced:
            return
        write = self.services.db.sessions.rewrite_in(
            record, event.with_metadata(**{SHOWN_BEFORE: replaced})
        )
        try:
            await self.services.db.gate.write(write)
        except Exception:
            log.exception("could not record the replaced draft")

    async def post_reply(
        self,
        key: ThreadKey,
        message_ts: str | None,
        outcome: TurnOutcome,
        broadcast: bool,
        shown_as: str | None = None,
    ) -> str:
        """Show the reply in message `message_ts` (posted under the name `shown_as`,
        None for the bot's own), or as new messages, the rest of a long one continued in
        the thread, all under the reply's owner; the ts of its first."""
        assert outcome.reply is not None
        agent = self.owner_of(outcome.reply.author)
        identity = self.posts.identity(agent)
        if message_ts is not None and identity and shown_as != agent:
            # Its username cannot change in place: posted anew (see module).
            if await self.posts.delete(key, message_ts):
                message_ts = None
        transfers = outcome.transfers
        chunks = split_message(markdown_to_mrkdwn(outcome.reply.text), self._limit())
        fallback = f"{agent}: {chunks[0]}"
        if transfers:
            fallback += f" ({transfer_line(transfers)})"
        # The sources and the feedback buttons close the reply: under its last message.
        feedback = [
            *sources_blocks(reply_sources(outcome.reply.custom_metadata)),
            feedback_block(outcome.reply.id),
        ]
        first = reply_blocks(chunks[0], agent=agent, transfers=transfers)
        first += feedback if len(chunks) == 1 else []
        shown = await self.posts.replace_or_post(
            key,
            message_ts,
            identity,
            broadcast,
            text=fallback,
            blocks=first,
            metadata=reply_metadata(agent, outcome.reply.invocation_id),
        )
        for n, chunk in enumerate(chunks[1:], start=2):
            await self.posts.post(
                key,
                identity=identity,
                broadcast=broadcast,
                text=chunk,
                blocks=continuation_blocks(chunk) + (feedback if n == len(chunks) else []),
            )
        return shown
