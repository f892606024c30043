"""Posting Block Kit that may not fit one message: nothing is cut, the rest follows.

Oversize sections are split on line boundaries; more blocks than one message holds
continue in the thread (or, for an ephemeral answer, in further answers), and the first
message says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.slack.limits import BLOCKS_PER_MESSAGE, Block, fit_sections

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
    pages[0] = [*pages[0], {"type": "context", "elements": [{"type": "mrkdwn", "text": note}]}]
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
