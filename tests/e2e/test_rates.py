"""End to end: rates before writes, across processes (issue 41 items 5 and 9).

A user's rate is checked before their message is accepted, so an over-rate message is
never written; it is counted in the database, so two bot processes on one PostgreSQL
let a user through `USER_RATE_BURST` times in all; an over-rate user is told once per
window however fast they post; and `/new` counts like a message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa

from agents.models.scripted import ScriptedModel
from bot.slack.dm_conversation import NEW_STARTED
from bot.slack.render.blocks import BUSY_TEXT
from storage import Database
from storage.schema import events
from tests.e2e.conftest import StartBot
from tests.e2e.harness import BotHarness, channel_message, dm
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

# A window far longer than any test: its limit is the burst.
RATE = {"user_rate_burst": 3, "user_rate_per_minute": 0.01}


def _busy(slack: FakeSlackApi) -> list[dict]:
    return [c for c in slack.calls_to("chat.postMessage") if c.get("text") == BUSY_TEXT]


async def _user_events(db: Database) -> list[str]:
    """The text of every user event written, in order."""
    async with db.engine.connect() as conn:
        rows = await conn.execute(
            sa.select(events.c.data).where(events.c.author == "user").order_by(events.c.seq)
        )
        return [str(data) for (data,) in rows]


async def test_rates_a_burst_in_a_thread_is_told_busy_once_and_never_written(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel([f"Answer {n}" for n in range(3)])
    bot = await start_bot(support_tree(model), **RATE)
    root = "1700000500.000100"
    await bot.send_event(channel_message("help", ts=root, mention=True))
    await bot.idle()
    for n in range(8):
        ts = f"1700000500.00020{n}"
        await bot.send_event(channel_message(f"more {n}", ts=ts, thread_ts=root, mention=True))
    await bot.idle()
    # Three messages through, one notice for the six beyond them, in the thread.
    assert len(model.requests) == 3
    [notice] = _busy(slack)
    assert notice["thread_ts"] == root
    written = await _user_events(bot.services.db)
    assert len(written) == 3
    assert not any(f"more {n}" in text for text in written for n in range(2, 8))


async def test_rates_new_counts_against_the_rate(slack: FakeSlackApi, start_bot: StartBot) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])), **RATE)
    answers = []
    for _ in range(12):
        resp = await bot.send_command("/new", "", channel="D1")
        assert resp.status == 200
        answers.append(await resp.text())
    assert [NEW_STARTED in a for a in answers] == [True] * 3 + [False] * 9
    assert all(BUSY_TEXT in a for a in answers[3:])


@pytest.fixture
async def shared_db(postgres_url: str) -> AsyncIterator[tuple[Database, Database]]:
    """Two processes' worth of database connections to one PostgreSQL database."""
    first, second = await Database.open(postgres_url), await Database.open(postgres_url)
    yield first, second
    await first.close()
    await second.close()


async def test_rates_hold_for_a_user_across_processes_on_one_database(
    slack: FakeSlackApi, shared_db: tuple[Database, Database]
) -> None:
    # Which process answers which message is not fixed: each can answer them all.
    reason = "the two processes share the user's rate, not the answers"
    models = [ScriptedModel([f"Answer {n}" for n in range(6)], partial=reason) for _ in range(2)]
    bots = [
        await BotHarness.start(slack, agent=support_tree(model), db=db, **RATE)
        for model, db in zip(models, shared_db, strict=True)
    ]
    try:
        # The user posts ten new threads, alternating between the two processes.
        for n in range(10):
            bot = bots[n % 2]
            await bot.send_event(channel_message(f"q{n}", ts=f"1700000600.00010{n}", mention=True))
            await bot.idle()
        # Three through in all, not three per process; told busy once, not once each.
        assert sum(len(m.requests) for m in models) == 3
        assert len(_busy(slack)) == 1
        # Another user has a rate of their own.
        await bots[1].send_event(dm("hello", ts="1700000600.000300", user="U2", channel="D2"))
        await bots[1].idle()
        assert sum(len(m.requests) for m in models) == 4
    finally:
        for bot in bots:
            await bot.stop()
