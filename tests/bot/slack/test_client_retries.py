"""The one retry policy for Slack Web API calls (`bot.slack.client`), against the fake API."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.errors import SlackApiError

from agents.metrics import REGISTRY
from bot.config import Settings
from bot.slack.client import RETRIES_METRIC, SlackClient
from tests.fakes.slack_api import FakeSlackApi


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi(members={"C1": ["U1"]}) as api:
        yield api


def settings(slack: FakeSlackApi, retries: int) -> Settings:
    return Settings(slack_bot_token="xoxb-test", slack_api_url=slack.url, slack_retry_count=retries)


async def test_slack_client_retries_any_5xx_until_it_clears(slack: FakeSlackApi) -> None:
    slack.fail("chat.postMessage", status=502, times=2)
    client = SlackClient(settings(slack, 3), retry_backoff=0.01)
    try:
        resp = await client.web.chat_postMessage(channel="C1", text="hi")
    finally:
        await client.close()
    assert resp["ok"]
    assert [a.status for a in slack.attempts] == [502, 502, 200]
    assert REGISTRY.get(RETRIES_METRIC, call="chat.postMessage") == 2


async def test_slack_client_gives_up_after_slack_retry_count_retries(slack: FakeSlackApi) -> None:
    slack.fail("chat.update", status=500, times=10**6)
    client = SlackClient(settings(slack, 2), retry_backoff=0.01)
    try:
        with pytest.raises(SlackApiError):
            await client.web.chat_update(channel="C1", ts="1.0", text="hi")
    finally:
        await client.close()
    # One policy: the first attempt and SLACK_RETRY_COUNT retries, never more.
    assert [a.status for a in slack.attempts] == [500, 500, 500]
