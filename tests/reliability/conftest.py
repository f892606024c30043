"""Fixtures for the reliability scenarios: the fake Slack Web API and a fake OpenAI server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.slack_api import FakeSlackApi


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi(members={"C1": ["U1", "U2"], "CSECRET": ["U9"]}) as api:
        yield api
    # Every call the bot made is one Slack accepts.
    assert [why for _, why in api.refused] == []


@pytest.fixture
async def openai() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server
