"""What the bot's replies show in the fake Slack, however they got there (streamed with
chat.startStream, posted whole, or a placeholder replaced with chat.update)."""

from __future__ import annotations

from typing import Any

from bot.slack.render.blocks import FAILURE_TEXT, INTERRUPTED_TEXT, THINKING_TEXT
from bot.slack.streaming import is_complete_reply
from tests.fakes.slack_api import FakeSlackApi


def finished(message: dict[str, Any]) -> bool:
    """A bot message that is neither a "thinking" placeholder nor a stream that is open,
    or stopped and not yet rewritten (it then carries no complete-reply metadata)."""
    if "chunks" in message:
        written = bool(message.get("metadata")) or bool(message.get("edited"))
        return not message.get("streaming") and written
    return message.get("text") != THINKING_TEXT


def bot_replies(slack: FakeSlackApi, channel: str, thread_ts: str | None = None) -> list[dict]:
    """The bot's messages (in one thread, or the whole channel), oldest first."""
    messages = slack.messages.get(channel, {}).values()
    mine = [
        m
        for m in messages
        if m.get("bot_id") and (thread_ts is None or thread_ts in (m.get("thread_ts"), m["ts"]))
    ]
    return sorted(mine, key=lambda m: float(m["ts"]))


async def wait_replies(
    slack: FakeSlackApi, channel: str, count: int = 1, *, within: float = 10.0
) -> list[dict]:
    """Wait until the channel shows `count` finished bot messages; returns them."""

    def done(api: FakeSlackApi) -> bool:
        return len([m for m in bot_replies(api, channel) if finished(m)]) >= count

    await slack.wait_for(done, within=within)
    return bot_replies(slack, channel)


def shown(message: dict[str, Any]) -> str:
    """The reply text a person reads: its sections' text, else its streamed text."""
    sections = [
        b["text"]["text"]
        for b in message.get("blocks") or []
        if b["type"] == "section" and "text" in b
    ]
    return "\n".join(sections) if sections else str(message.get("text") or "")


def answer_of(message: dict[str, Any]) -> str:
    """`shown(message)` without the `**agent:** ` a streamed reply opens with (a reply
    that takes longer than the first-text wait streams; a quicker one is posted whole)."""
    text = shown(message)
    if text.startswith("**") and ":** " in text:
        return text.split(":** ", 1)[1]
    return text


def context_text(message: dict[str, Any]) -> str:
    """The context line under a reply (the agent that wrote it, and any transfer)."""
    return " ".join(
        el["text"]
        for b in message.get("blocks") or []
        if b["type"] == "context"
        for el in b["elements"]
    )


def is_answer(message: dict[str, Any]) -> bool:
    """A bot message that answers a message: a streamed reply, a replaced placeholder (the
    reply, or a failure notice), a reply posted whole (it carries the complete-reply
    metadata) or a failure notice posted as a new message."""
    if not message.get("bot_id"):
        return False
    return (
        "chunks" in message
        or bool(message.get("edited"))
        or is_complete_reply(message)
        or message.get("text") in (FAILURE_TEXT, INTERRUPTED_TEXT)
    )


def answers(slack: FakeSlackApi) -> list[dict]:
    """Every finished answer (`is_answer`) in any channel, oldest first."""
    found = [
        m
        for channel in slack.messages.values()
        for m in channel.values()
        if is_answer(m) and finished(m)
    ]
    return sorted(found, key=lambda m: float(m["ts"]))


async def wait_answers(slack: FakeSlackApi, count: int = 1, *, within: float = 10.0) -> list[dict]:
    """Wait until `count` answers are finished (see `answers`); returns them all."""
    await slack.wait_for(lambda api: len(answers(api)) >= count, within=within)
    return answers(slack)
