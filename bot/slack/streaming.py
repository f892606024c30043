"""A reply streamed into its Slack thread on slack_sdk's stream helper.

`AsyncWebClient.chat_stream` gives an `AsyncChatStream`, which owns the protocol:
`chat.startStream` with its first flush, `chat.appendStream` after, `chat.stopStream` to
finish. `SlackStream` is the bot's layer on top, and speaks to it only through `append`,
`stop` and `ts`:
- what the model wrote is made safe (mentions escaped, links honest) before any of it
  reaches the helper (`render.markdown.MarkdownGate`), a mention split across deltas
  included;
- the message is started with the reply's first text (the helper's first flush), not
  before, under the agent that owns it (`owner_of`: the agent that writes it, or for a
  pipeline's step the workflow agent it runs in, `agents.runner.reply_owner`): its
  username (with `CHAT_WRITE_CUSTOMIZE`) and the first words (`speaker_prefix`, what a
  notification shows, as a posted reply's fallback text names its agent) name the owner
  from the first visible moment. Until
  then the panel shows the working agent as its status, which Slack clears when the
  message is posted, and the hand-offs wait to open the message with that text. Only a
  reply streams: the runtime streams nothing a review may still replace
  (`agents.llm.streaming`), so a reply written on a decide-first model is shown whole;
- this layer decides when text goes out, by time, never the helper's size buffer: the
  first text once it has gathered `FIRST_TEXT_WAIT_S` (the reply is shown whole, in one
  `chat.postMessage` and no stream, when it is complete by then), then at most once per
  `STREAM_APPEND_SECONDS` (Slack's Tier 4 limit), never beyond the length one reply
  message holds; once the message is started, a hand-off shows at once (its task chunks,
  `bot.slack.timeline`). Each flush is one `append(markdown_text=..., chunks=[...])`,
  which the helper sends at once because it carries chunks;
- the stored reply is the truth: when what was streamed is not exactly its start (a
  step turned streamed text into a transfer, or the reply is longer than one message),
  the stream stops and the caller rewrites the message with `chat.update`, as it
  replaces a placeholder, posting the rest as continuations; what the customer had
  been shown (`sent`) is then stored with the event that replaced it
  (`agents.events.SHOWN_BEFORE`);
- the started message is recorded (`opened`) before anything else is sent, and the
  finished one carries `REPLY_METADATA`, so a recovery after a crash can tell a
  finished reply (nothing more to post) from an interrupted stream (finished in place).

Where Slack refuses the stream (the method is not allowed, a channel without the
recipient ids it requires) nothing is streamed: `open_stream` answers None (the caller
posts a placeholder), or the refused stream shows nothing and the reply is posted whole.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from agents.events import Event
from agents.knowledge.reply_check import reply_sources
from agents.metrics import REGISTRY
from bot.slack.messages import IncomingMessage
from bot.slack.render.blocks import feedback_block, reply_context
from bot.slack.render.markdown import MarkdownGate, safe_markdown
from bot.slack.render.sources import sources_blocks
from bot.slack.timeline import Chunk, Timeline
from storage.threads import ThreadKey

log = logging.getLogger(__name__)

REGISTRY.describe(
    "support_bot_reply_streams_total",
    "counter",
    "Replies by how they reached Slack: streamed, rewritten after a stream, posted whole "
    "(complete before a stream was needed), or refused (posted whole)",
)

# The message metadata of a reply that is complete in its message (see module).
REPLY_EVENT_TYPE = "support_bot_reply"
SLACK_FAILURES = (SlackClientError, aiohttp.ClientError, TimeoutError)
# Slack's limit on the text of one stream call. Every flush here carries chunks, so the
# helper sends at once and its size trigger (`buffer_size`) never decides anything.
_CALL_TEXT_CHARS = 12_000


def reply_metadata(agent: str, invocation_id: str | None = None) -> dict[str, Any]:
    """The metadata marking a message as the complete reply `agent` wrote in invocation
    `invocation_id`."""
    payload = {"agent": agent}
    if invocation_id:
        payload["invocation_id"] = invocation_id
    return {"event_type": REPLY_EVENT_TYPE, "event_payload": payload}


def is_complete_reply(message: dict[str, Any], invocation_id: str | None = None) -> bool:
    """Whether a Slack message (from conversations.replies with metadata) is a
    complete reply (of invocation `invocation_id`, when given)."""
    metadata = message.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("event_type") != REPLY_EVENT_TYPE:
        return False
    if invocation_id is None:
        return True
    payload = metadata.get("event_payload")
    return isinstance(payload, dict) and payload.get("invocation_id") == invocation_id


# How long the first text gathers before it is shown: a reply complete by then is
# posted whole (one call instead of a stream's two or more), and a streamed one opens
# with more than a word. Under what a reader notices.
FIRST_TEXT_WAIT_S = 0.25

# Called with the message's ts as soon as Slack starts the stream (it records it).
Opened = Callable[[str], Awaitable[None]]


# The helper of a stream posting as the agent named (the message's username, if any).
HelperFor = Callable[[str], Awaitable[AsyncChatStream]]
# The identity arguments (a username, or none) that post as the agent named.
IdentityOf = Callable[[str], dict[str, Any]]
# The agent that owns what the agent named writes (the name a reply is shown under).
OwnerOf = Callable[[str], str]


def speaker_prefix(agent: str) -> str:
    """The words a streamed reply opens with: its agent, as a posted reply's notification
    text (`agent: ...`) names it."""
    return f"**{agent}:** "


async def open_stream(
    client: AsyncWebClient,
    key: ThreadKey,
    msg: IncomingMessage,
    *,
    identity: IdentityOf,
    owner_of: OwnerOf,
    limit: int,
    interval: float,
    steps: frozenset[str],
    names: frozenset[str],
    opened: Opened,
) -> SlackStream | None:
    """The stream of the reply to `msg`, to be started with its first text under the
    agent that owns it (`identity` of `owner_of` the writer); None when Slack will not stream
    here (a channel message without the recipient ids)."""
    if not msg.is_dm and not (msg.user and msg.team_id):
        REGISTRY.inc("support_bot_reply_streams_total", outcome="refused")
        return None

    def helper_for(agent: str) -> Awaitable[AsyncChatStream]:
        return client.chat_stream(
            channel=key.channel_id,
            thread_ts=key.thread_ts,
            recipient_user_id=msg.user or None,
            recipient_team_id=msg.team_id or None,
            task_display_mode="timeline",
            buffer_size=_CALL_TEXT_CHARS,
            **identity(agent),
        )

    return SlackStream(
        helper_for,
        owner_of=owner_of,
        limit=limit,
        interval=interval,
        steps=steps,
        names=names,
        opened=opened,
    )


class SlackStream:
    """One reply to be streamed through a helper made for its speaker (`helper_for`):
    its message `ts` is None until the reply's first text starts it."""

    def __init__(
        self,
        helper_for: HelperFor,
        *,
        owner_of: OwnerOf,
        limit: int,
        interval: float,
        steps: frozenset[str],
        names: frozenset[str],
        opened: Opened,
    ) -> None:
        self._helper_for = helper_for
        self._owner_of = owner_of
        self.helper: AsyncChatStream | None = None  # made for the first text's owner
        self.speaker: str | None = None  # the owner the message is started as
        self._held: list[Chunk] = []  # tasks waiting for the first text
        self.limit = limit
        self.interval = interval
        self.timeline = Timeline(steps, names)
        self.sent = ""  # the safe Markdown text shown so far
        self.broken = False
        self._opened = opened
        self._recorded = False  # `opened` was told
        self._stopped = False
        self._gate = MarkdownGate()
        self._pending = ""
        self._pending_since: float | None = None  # when the first text came
        self._last_text_at: float | None = None
        self._full = False
        # Text that is due goes out even when no later event comes (a model that
        # pauses): a timer, and the flush it started. One Slack call at a time.
        self._lock = asyncio.Lock()
        self._timer: asyncio.TimerHandle | None = None
        self._flush: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._closed = False

    @property
    def ts(self) -> str | None:
        """The streamed message, once the reply's first text started it."""
        return self.helper.ts if self.helper is not None else None

    async def observe(self, event: Event) -> None:
        """Show one event of the invocation: its text in batches, its tasks with the
        first text and at once after it."""
        self._raise_failure()
        if self.broken:
            return  # refused or gone: the reply is written whole
        tasks = self.timeline.observe(event)
        if self.ts is None and self.speaker is None:
            # Not started: the hand-offs so far open the message with the first text.
            self._held += tasks
            tasks = []
        if event.partial and not self._full:
            if self.speaker is None:
                self.speaker = self._owner_of(event.author)
                self._pending = speaker_prefix(self.speaker)
            text = self._gate.feed(event.text)
            if len(self.sent) + len(self._pending) + len(text) > self.limit:
                self._full = True  # the rest comes with the stored reply
            else:
                self._pending += text
        now = time.monotonic()
        if self._pending and self._pending_since is None:
            self._pending_since = now
        if tasks or (self._pending and self._due_in(now) <= 0):
            self._cancel_timer()
            async with self._lock:
                await self._send(tasks)
        elif self._pending and self._timer is None and self._flush is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self._due_in(now), self._flush_due)

    def _due_in(self, now: float) -> float:
        """Seconds until the pending text may be sent."""
        if self._last_text_at is None:
            assert self._pending_since is not None
            return self._pending_since + FIRST_TEXT_WAIT_S - now
        return self._last_text_at + self.interval - now

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _flush_due(self) -> None:
        self._timer = None
        self._flush = asyncio.create_task(self._send_pending())

    async def _send_pending(self) -> None:
        try:
            async with self._lock:
                if self._pending and not self._closed:
                    await self._send([])
        except Exception as exc:  # a takeover found on opening: the turn's to raise
            self._failure = exc
        finally:
            self._flush = None

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    async def _settle(self) -> None:
        """No more text goes out by itself: the timer is off, its flush is done."""
        self._closed = True
        self._cancel_timer()
        if self._flush is not None:
            await asyncio.wait({self._flush})

    async def _send(self, tasks: list[Chunk]) -> None:
        """Flush the pending text and `tasks` through the helper (its chunks make it send
        at once), then record the message if this started it."""
        if self.broken:
            return
        text, self._pending = self._pending, ""
        if self.helper is None:
            assert self.speaker is not None
            self.helper = await self._helper_for(self.speaker)
            tasks, self._held = self._held + tasks, []
        try:
            await self.helper.append(markdown_text=text or None, chunks=tasks)
        except SLACK_FAILURES as exc:
            # Refused, or the stream is gone (expired, say): the reply is written whole.
            code = exc.response.get("error") if isinstance(exc, SlackApiError) else None
            if self.ts is None:
                log.info("reply not streamed (%s): posted whole", code or type(exc).__name__)
            else:
                log.warning("stream append failed: %s", code or type(exc).__name__)
            self.broken = True
            return
        if not self._recorded and self.ts is not None:
            self._recorded = True
            await self._opened(self.ts)
        if text:
            self.sent += text
            self._last_text_at = time.monotonic()

    async def finish(self, reply: Event, transfers: Sequence[str]) -> bool:
        """Stop the stream with `reply`: True when the message now shows it whole and is
        marked complete; False when the caller must still write it (`chat.update` of
        `ts`, or a new message when nothing was streamed)."""
        await self._settle()
        self._raise_failure()
        if self.ts is None:
            outcome = "refused" if self.broken else "whole"
            REGISTRY.inc("support_bot_reply_streams_total", outcome=outcome)
            return False
        owner = self._owner_of(reply.author)
        text = speaker_prefix(owner) + safe_markdown(reply.text)
        whole = (
            len(text) <= self.limit
            and text.startswith(self.sent)
            and owner == self.speaker
            and not self.broken
        )
        if whole:
            assert self.helper is not None
            try:
                await self.helper.stop(
                    markdown_text=text[len(self.sent) :] or None,
                    chunks=self.timeline.close(),
                    # The feedback buttons close the reply, as in the placeholder flow.
                    blocks=[
                        reply_context(owner, transfers),
                        *sources_blocks(reply_sources(reply.custom_metadata)),
                        feedback_block(reply.id),
                    ],
                    metadata=reply_metadata(owner, reply.invocation_id),
                )
            except SLACK_FAILURES as exc:
                log.warning("stream stop failed: %s", type(exc).__name__)
            else:
                self._stopped = True
                REGISTRY.inc("support_bot_reply_streams_total", outcome="streamed")
                return True
        await self.stop(failed=False)
        REGISTRY.inc("support_bot_reply_streams_total", outcome="rewritten")
        return False

    def replaced(self, reply: Event | None) -> str:
        """The text the customer was shown that `reply` (None: a failure notice) does
        not keep: "" when nothing was shown, or the reply starts with what was."""
        if not self.sent:
            return ""
        shown = self.sent.removeprefix(speaker_prefix(self.speaker or ""))
        if reply is not None and self._owner_of(reply.author) == self.speaker:
            if safe_markdown(reply.text).startswith(shown):
                return ""
        return shown

    async def stop(self, *, failed: bool) -> None:
        """End the stream without a reply in it (the caller rewrites the message, when
        one was started); never raises."""
        await self._settle()
        self._failure = None
        if self.ts is None or self._stopped:
            return
        self._stopped = True
        assert self.helper is not None
        try:
            await self.helper.stop(chunks=self.timeline.close(failed=failed))
        except SLACK_FAILURES as exc:
            log.info("stream stop failed: %s", type(exc).__name__)
