"""Fixtures for end-to-end tests: the fake Slack Web API and the bot on real HTTP."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import BotHarness, open_database
from tests.fakes.slack_api import FakeSlackApi

StartBot = Callable[..., Awaitable[BotHarness]]
POSTING = {
    "chat.postMessage",
    "chat.update",
    "chat.postEphemeral",
    "response_url",
    "chat.startStream",
    "chat.appendStream",
    "chat.stopStream",
}
BROADCAST = re.compile(r"<!(channel|here|everyone)(\|[^>]*)?>|<!subteam\^")


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi(members={"C1": ["U1", "U2"], "CLEAD": ["ULEAD"]}) as api:
        yield api
    # Every call the bot made is one Slack accepts, and nothing it posted broadcasts.
    assert [why for _, why in api.refused] == []
    posted = [c.args for c in api.calls if c.method in POSTING]
    assert [
        a
        for a in posted
        if BROADCAST.search(json.dumps([a.get(k) for k in ("text", "blocks", "chunks")]))
    ] == []


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[Any]:
    db = await open_database(tmp_path)
    yield db
    await db.close()


@pytest.fixture
async def start_bot(slack: FakeSlackApi, database: Any) -> AsyncIterator[StartBot]:
    """`await start_bot(agent, **settings)` starts the bot; all are stopped at teardown."""
    started: list[BotHarness] = []

    async def start(agent: Any, **kwargs: Any) -> BotHarness:
        harness = await BotHarness.start(slack, agent=agent, db=database, **kwargs)
        started.append(harness)
        return harness

    yield start
    for harness in started:
        await harness.stop()
