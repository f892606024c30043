"""Writes that cannot succeed fail with one clear line; what was stored stays readable."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from agents.errors import SessionStoreError
from agents.events import Event, Part
from storage import Database, StorageWriteError


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
