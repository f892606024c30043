"""A reply streamed into its Slack thread: `chat.startStream`, the agent hand-offs as a
task timeline and the text in batches (`chat.appendStream`), then `chat.stopStream`
with the context line naming the agent that owns the reply, as a placeholder's reply has.

Guarantees, the same as the placeholder's:
- what the model wrote is made safe (mentions escaped, links honest) before any of it
  is sent (`render.markdown.MarkdownGate`), a mention split across deltas included;
- the first text goes out at once, then at most once per `STREAM_APPEND_SECONDS`
  (Slack's Tier 4 limit), never beyond the length one reply message holds;
- the stored reply is the truth: when what was streamed is not exactly its start (a
  step turned streamed text into a transfer, or the reply is longer than one message),
  the stream stops and the caller rewrites the message with `chat.update`, as it
  replaces a placeholder, posting the rest as continuations;
- the finished message carries `REPLY_METADATA`, so a recovery after a crash can tell a
  finished reply (nothing more to post) from an interrupted stream (finished in place).

Where Slack refuses the stream (the method is not allowed, a channel without the
recipient ids it requires) `open_stream` answers None and the caller posts a placeholder.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError

from agents.events import Event
from agents.metrics import REGISTRY
from bot.slack.messages import IncomingMessage
from bot.slack.render.blocks import reply_context
from bot.slack.render.markdown import MarkdownGate, safe_markdown
from bot.slack.timeline import Chunk, Timeline
from storage.threads import ThreadKey

log = logging.getLogger(__name__)

REGISTRY.describe(
    "support_bot_reply_streams_total",
    "counter",
    "Replies by how they reached Slack: streamed, rewritten after a stream, or refused",
)

# The message metadata of a reply that is complete in its message (see module).
REPLY_EVENT_TYPE = "support_bot_reply"
_SLACK_FAILURES = (SlackApiError, aiohttp.ClientError, TimeoutError)


def reply_metadata(agent: str) -> dict[str, Any]:
    """The metadata marking a message as a complete reply written by `agent`."""
    return {"event_type": REPLY_EVENT_TYPE, "event_payload": {"agent": agent}}


def is_complete_reply(message: dict[str, Any]) -> bool:
    """Whether a Slack message (from conversations.replies with metadata) is a
    complete reply."""
    metadata = message.get("metadata")
    return isinstance(metadata, dict) and metadata.get("event_type") == REPLY_EVENT_TYPE


async def open_stream(
    client: Any,
    key: ThreadKey,
    msg: IncomingMessage,
    *,
    identity: dict[str, Any],
    limit: int,
    interval: float,
    steps: frozenset[str],
) -> SlackStream | None:
    """Start streaming the reply to `msg`, or None when Slack will not stream here."""
    if not msg.is_dm and not (msg.user and msg.team_id):
        REGISTRY.inc("support_bot_reply_streams_total", outcome="refused")
        return None
    try:
        resp = await client.chat_startStream(
            channel=key.channel_id,
            thread_ts=key.thread_ts,
            recipient_user_id=msg.user or None,
            recipient_team_id=msg.team_id or None,
            task_display_mode="timeline",
            **identity,
        )
    except _SLACK_FAILURES as exc:
        code = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
        log.info("reply not streamed (%s): a placeholder instead", code)
        REGISTRY.inc("support_bot_reply_streams_total", outcome="refused")
        return None
    ts = str(resp["ts"])
    return SlackStream(client, key.channel_id, ts, limit=limit, interval=interval, steps=steps)


class SlackStream:
    """One reply being streamed into message `ts` of `channel`."""

    def __init__(
        self,
        client: Any,
        channel: str,
        ts: str,
        *,
        limit: int,
        interval: float,
        steps: frozenset[str] = frozenset(),
    ) -> None:
        self.client = client
        self.channel = channel
        self.ts = ts
        self.limit = limit
        self.interval = interval
        self.timeline = Timeline(steps)
        self.sent = ""  # the safe Markdown text appended so far
        self.broken = False
        self._gate = MarkdownGate()
        self._pending = ""
        self._last_text_at: float | None = None  # the first text goes at once
        self._full = False

    async def observe(self, event: Event) -> None:
        """Show one event of the invocation: its tasks at once, its text in batches."""
        tasks = self.timeline.observe(event)
        if event.partial and not self._full:
            text = self._gate.feed(event.text)
            if len(self.sent) + len(self._pending) + len(text) > self.limit:
                self._full = True  # the rest comes with the stored reply
            else:
                self._pending += text
        due = self._last_text_at is None or time.monotonic() - self._last_text_at >= self.interval
        if tasks or (self._pending and due):
            await self._append(tasks)

    async def _append(self, tasks: list[Chunk]) -> None:
        if self.broken:
            return
        chunks: list[Chunk] = []
        text, self._pending = self._pending, ""
        if text:
            chunks.append({"type": "markdown_text", "text": text})
        chunks += tasks
        try:
            await self.client.chat_appendStream(channel=self.channel, ts=self.ts, chunks=chunks)
        except _SLACK_FAILURES as exc:
            # The stream is gone (expired, say): the reply is written with chat.update.
            log.warning("stream append failed: %s", type(exc).__name__)
            self.broken = True
            return
        if text:
            self.sent += text
            self._last_text_at = time.monotonic()

    async def finish(self, reply: Event, transfers: Sequence[str]) -> bool:
        """Stop the stream with `reply`: True when the message now shows it whole and is
        marked complete; False when the caller must still write it (`chat.update`)."""
        text = safe_markdown(reply.text)
        whole = len(text) <= self.limit and text.startswith(self.sent) and not self.broken
        if whole:
            chunks = [{"type": "markdown_text", "text": text[len(self.sent) :]}]
            chunks = [c for c in chunks if c["text"]] + self.timeline.close()
            try:
                await self.client.chat_stopStream(
                    channel=self.channel,
                    ts=self.ts,
                    chunks=chunks or None,
                    blocks=[reply_context(reply.author, transfers)],
                    metadata=reply_metadata(reply.author),
                )
            except _SLACK_FAILURES as exc:
                log.warning("stream stop failed: %s", type(exc).__name__)
            else:
                REGISTRY.inc("support_bot_reply_streams_total", outcome="streamed")
                return True
        await self.stop(failed=False)
        REGISTRY.inc("support_bot_reply_streams_total", outcome="rewritten")
        return False

    async def stop(self, *, failed: bool) -> None:
        """End the stream without a reply in it (the caller rewrites the message);
        never raises."""
        try:
            await self.client.chat_stopStream(
                channel=self.channel, ts=self.ts, chunks=self.timeline.close(failed=failed) or None
            )
        except _SLACK_FAILURES as exc:
            log.info("stream stop failed: %s", type(exc).__name__)


async def stop_abandoned(client: Any, channel: str, ts: str) -> None:
    """Stop a stream a dead process left open (recovery); a stream Slack already ended
    answers an error, which is fine. Never raises."""
    try:
        await client.chat_stopStream(channel=channel, ts=ts)
    except _SLACK_FAILURES as exc:
        log.info("abandoned stream not stopped: %s", type(exc).__name__)
