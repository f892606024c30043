"""Answering the person who asked, where only they see it: a slash command's or a
shortcut's ephemeral response, or (a modal submission has no response URL) an
ephemeral message in the thread."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

from slack_bolt.async_app import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.command_args import ThreadRef
from bot.slack.render.limits import Block, Reply


def ephemeral_response(respond: AsyncRespond) -> Reply:
    """A `Reply` through the request's `respond`, seen by the requester only."""
    return partial(_respond, respond)


def ephemeral_in_thread(
    client: AsyncWebClient, ref: ThreadRef, user: str
) -> Callable[[str, list[Block] | None], Coroutine[Any, Any, None]]:
    """A `Reply` posted in the thread `ref`, seen by `user` only; each answer is a
    coroutine, so it can also run as a background task."""
    return partial(_post_ephemeral, client, ref, user)


async def _respond(respond: AsyncRespond, text: str, blocks: list[Block] | None) -> None:
    await respond(text=text, blocks=blocks, response_type="ephemeral", replace_original=False)


async def _post_ephemeral(
    client: AsyncWebClient, ref: ThreadRef, user: str, text: str, blocks: list[Block] | None
) -> None:
    await client.chat_postEphemeral(
        channel=ref.channel, user=user, thread_ts=ref.thread_ts, text=text, blocks=blocks
    )
