"""Slack's documented limits on what the bot posts, and posting within them.

Every figure is from Slack's Block Kit and Web API reference. Text is measured after
escaping (`&` becomes `&amp;`), because that is what Slack counts. Nothing is cut:
long text is split on line boundaries into more sections, and more blocks than one
message holds continue in the thread (or, for an ephemeral answer, in further
answers), the first message saying so.

It also holds the two Block Kit primitives every surface uses (a section, a context
line). Block Kit is built only under `bot.slack.render`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.slack.render.mrkdwn import split_message

Block = dict[str, Any]

SECTION_TEXT = 3_000  # a section block's text
CONTEXT_TEXT = 3_000  # the text of a context block's element
BLOCKS_PER_MESSAGE = 50  # blocks in one message (a modal or App Home holds 100)


def section(text: str) -> Block:
    """One mrkdwn section (the caller keeps `text` within `SECTION_TEXT`)."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": text or " "}}


def context(text: str) -> Block:
    """One context line of mrkdwn, the small grey text under a message."""
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def sections(text: str) -> list[Block]:
    """As many mrkdwn sections as escaped `text` needs, split on line boundaries."""
    return [section(chunk) for chunk in split_message(text, SECTION_TEXT)]


def fit_sections(blocks: list[Block]) -> list[Block]:
    """`blocks` with every oversize mrkdwn section split into several; nothing dropped."""
    fitted: list[Block] = []
    for block in blocks:
        text = block.get("text") if block.get("type") == "section" else None
        if isinstance(text, dict) and text.get("type") == "mrkdwn":
            body = str(text.get("text", ""))
            if len(body) > SECTION_TEXT:
                fitted.extend(sections(body))
                continue
        fitted.append(block)
    return fitted


# Link previews never open inside what the bot posts: links come from models and users.
NO_UNFURL: dict[str, Any] = {"unfurl_links": False, "unfurl_media": False}

Reply = Callable[[str, list[Block] | None], Awaitable[None]]


def paged(blocks: list[Block], *, where: str = "in this thread") -> list[list[Block]]:
    """`blocks` as messages within Slack's limits; the first notes how many follow."""
    fitted = fit_sections(blocks)
    if len(fitted) <= BLOCKS_PER_MESSAGE:
        return [fitted]
    size = BLOCKS_PER_MESSAGE - 1
    pages = [fitted[i : i + size] for i in range(0, len(fitted), size)]
    more = len(pages) - 1
    note = f"Continued {where} ({more} more message{'s' if more > 1 else ''})."
    pages[0] = [*pages[0], context(note)]
    return pages


async def post_paged(
    client: Any, *, channel: str, text: str, blocks: list[Block], thread_ts: str | None = None
) -> str:
    """Post `blocks` on `channel` (in `thread_ts` if given); later pages follow in the
    first message's thread. Returns the first message's ts."""
    first, *rest = paged(blocks)
    thread = {"thread_ts": thread_ts} if thread_ts else {}
    answer = await client.chat_postMessage(
        channel=channel, text=text, blocks=first, **thread, **NO_UNFURL
    )
    ts = str(answer["ts"])
    for number, page in enumerate(rest, start=2):
        await client.chat_postMessage(
            channel=channel,
            thread_ts=thread_ts or ts,
            text=f"{text} (part {number})",
            blocks=page,
            **NO_UNFURL,
        )
    return ts


async def reply_paged(reply: Reply, text: str, blocks: list[Block] | None) -> None:
    """Answer through `reply` (an ephemeral response), one answer per page."""
    if blocks is None:
        await reply(text, None)
        return
    for number, page in enumerate(paged(blocks, where="below"), start=1):
        await reply(text if number == 1 else f"{text} (part {number})", page)
