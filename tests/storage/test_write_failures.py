"""Writes that cannot succeed fail with one clear line; what was stored stays readable."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from agents.errors import SessionStoreError
from agents.events import Event, Part
from storage import Database, StorageWriteError
from storage.engine import create_engine


async def test_write_to_read_only_sqlite_fails_clearly_and_keeps_events(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    db = await Database.open(f"sqlite:///{path}")
    session = await db.sessions.create_session(app_name="app", user_id="u1", session_id="s1")
    await db.sessions.append_event(session, Event(author="user", parts=(Part(text="kept"),)))
    await db.close()

    read_only = await Database.open(f"sqlite:///file:{path}?mode=ro&uri=true")
    try:
        loaded = await read_only.sessions.get_session(app_name="app", user_id="u1", session_id="s1")
        assert loaded is not None
        with pytest.raises(StorageWriteError, match="readonly") as caught:
            await read_only.sessions.append_event(loaded, Event(author="user"))
        assert "\n" not in str(caught.value)
        assert isinstance(caught.value, SessionStoreError)  # the runner lets it escape
        again = await read_only.sessions.get_session(app_name="app", user_id="u1", session_id="s1")
    finally:
        await read_only.close()
    assert again is not None and [e.text for e in again.events] == ["kept"]


async def test_write_waits_out_another_process_holding_the_sqlite_lock(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    db = await Database.open(f"sqlite:///{path}")
    session = await db.sessions.create_session(app_name="app", user_id="u1", session_id="s1")
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        locked.set()
        release.wait(5)
        conn.execute("COMMIT")
        conn.close()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        await asyncio.to_thread(locked.wait, 5)
        append = asyncio.ensure_future(db.sessions.append_event(session, Event(author="user")))
        await asyncio.sleep(0.3)
        assert not append.done()
        release.set()
        stored = await asyncio.wait_for(append, 5)
    finally:
        release.set()
        holder.join()
        await db.close()
    assert stored.id == "e1"


async def test_failed_statement_never_carries_the_persons_words(db_url: str) -> None:
    """A statement's bound values (a person's message) stay out of the error and so out of
    every log line that reports it: the engines hide SQL parameters."""
    words = "my card is 4242 4242 4242 4242"
    engine = create_engine(db_url)
    try:
        with pytest.raises(DBAPIError) as caught:
            async with engine.begin() as conn:
                await conn.execute(text("INSERT INTO no_such_table VALUES (:v)"), {"v": words})
    finally:
        await engine.dispose()
    assert "no_such_table" in str(caught.value)
    assert words not in str(caught.value)
