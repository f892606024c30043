"""Fixtures for the reliability scenarios: the fake Slack Web API and a fake OpenAI server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import BotProcess


@pytest.fixture(autouse=True)
def _reap_bot_processes() -> Iterator[None]:
    """A test that fails before stopping its bot processes leaves none running."""
    yield
    BotProcess.reap()


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
