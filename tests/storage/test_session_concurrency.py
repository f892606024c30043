"""Concurrent appends to one session: atomic, ordered, never a lost or "stale" write."""

from __future__ import annotations

import asyncio
import logging

import pytest
import sqlalchemy as sa

from agents.events import Event, Part
from agents.metrics import REGISTRY
from storage import Database
from storage.schema import events
from storage.sessions import CORRUPT_EVENTS_METRIC

APPENDS_PER_WRITER = 200


async def _write(db: Database, writer: str, session_id: str) -> None:
    session = await db.sessions.get_session(app_name="app", user_id="u1", session_id=session_id)
    assert session is not None
    for i in range(APPENDS_PER_WRITER):
        event = Event(author=writer, parts=(Part(text=f"{writer}:{i}"),))
        await db.sessions.append_event(session, event)


async def _two_writers(url: str) -> None:
    # Two engines, as two bot processes would have.
    first, second = await Database.open(url), await Database.open(url)
    try:
        await first.sessions.create_session(app_name="app", user_id="u1", session_id="s1")
        await asyncio.gather(_write(first, "a", "s1"), _write(second, "b", "s1"))
        loaded = await first.sessions.get_session(app_name="app", user_id="u1", session_id="s1")
    finally:
        await first.close()
        await second.close()
    assert loaded is not None
    assert len(loaded.events) == 2 * APPENDS_PER_WRITER
    assert [e.id for e in loaded.events] == [f"e{n}" for n in range(1, 401)]
    for writer in ("a", "b"):
        texts = [e.text for e in loaded.events if e.author == writer]
        assert texts == [f"{writer}:{i}" for i in range(APPENDS_PER_WRITER)]


async def test_session_two_writers_on_postgres_lose_nothing(postgres_url: str) -> None:
    await _two_writers(postgres_url)


async def test_session_two_writers_on_sqlite_lose_nothing(sqlite_url: str) -> None:
    await _two_writers(sqlite_url)


async def test_session_concurrent_appends_get_distinct_ids(db: Database) -> None:
    session = await db.sessions.create_session(app_name="app", user_id="u1")
    stored = await asyncio.gather(
        *(db.sessions.append_event(session, Event(author="user")) for _ in range(50))
    )
    assert sorted(e.seq for e in stored) == list(range(1, 51))
    loaded = await db.sessions.get_session(app_name="app", user_id="u1", session_id=session.id)
    assert loaded is not None and [e.seq for e in loaded.events] == list(range(1, 51))


async def test_session_corrupt_event_row_is_skipped_and_reported(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    session = await db.sessions.create_session(app_name="app", user_id="u1", session_id="s1")
    for text in ("one", "two", "three"):
        await db.sessions.append_event(session, Event(author="user", parts=(Part(text=text),)))
    async with db.engine.begin() as conn:
        row_id = (await conn.execute(sa.select(events.c.pk).where(events.c.seq == 2))).scalar_one()
        await conn.execute(
            sa.update(events).where(events.c.pk == row_id).values(data='{"author": "us')
        )

    with caplog.at_level(logging.ERROR, logger="storage.sessions"):
        loaded = await db.sessions.get_session(app_name="app", user_id="u1", session_id="s1")

    assert loaded is not None
    assert [(e.id, e.text) for e in loaded.events] == [("e1", "one"), ("e3", "three")]
    assert f"row {row_id} in session s1" in caplog.text
    assert REGISTRY.get(CORRUPT_EVENTS_METRIC) == 1
    # The counter on the session row still moves on: no id is reused.
    assert (await db.sessions.append_event(loaded, Event(author="user"))).id == "e4"
