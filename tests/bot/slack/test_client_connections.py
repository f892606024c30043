"""The shared Slack session has a connection for every invocation slot (`bot.slack.client`)."""

from __future__ import annotations

import asyncio

from bot.config import Settings
from bot.slack.client import SlackClient
from tests.fakes.slack_api import FakeSlackApi


async def test_every_invocation_slot_gets_a_connection_without_queueing() -> None:
    # 150 calls at once against a Slack that takes 3 s to answer: with aiohttp's default
    # 100 connections only 100 would be held at once, the last 50 waiting for a connection.
    # Counted by the fake, not timed, so a loaded machine cannot fail it.
    async with FakeSlackApi(latency=3.0) as slack:
        settings = Settings(
            slack_bot_token="xoxb-test", slack_api_url=slack.url, max_concurrent_invocations=150
        )
        client = SlackClient(settings)
        try:
            await asyncio.gather(
                *(client.web.chat_postMessage(channel="D1", text=f"m{n}") for n in range(150))
            )
        finally:
            await client.close()
    assert len(slack.calls_to("chat.postMessage")) == 150
    assert slack.peak_in_flight == 150
