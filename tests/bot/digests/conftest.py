"""The fake Slack Web API and a client on it, for the digest scenarios."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_api import FakeSlackApi


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi() as fake:
        yield fake


@pytest.fixture
async def client(slack: FakeSlackApi) -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-test", base_url=slack.url)
