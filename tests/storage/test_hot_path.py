"""The per-message storage path: SQLite on the loop's thread, and the writes a turn merges."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from agents.events import Event, EventActions, Part
from agents.sessions.service import SessionNotFoundError
from storage import Database
from storage.delivery.inflight import InflightKey, MessageTakenOverError
from storage.sqlite_inline import InlineConnection
from storage.threads import ThreadKey

KEY = ThreadKey(team_id="T1", channel_id="C1", thread_ts="1.0")
MESSAGE = InflightKey(team_id="T1", channel_id="C1", message_ts="1.0")


async def test_sqlite_statements_run_on_the_event_loop_thread(tmp_path: Path) -> None:
    db = await Database.open(f"sqlite:///{tmp_path / 'bot.db'}")
    seen: list[int] = []
    try:
        async with db.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            assert isinstance(raw.driver_connection, InlineConnection)
            sqlite = raw.driver_connection.sqlite
            sqlite.create_function("whose_thread", 0, lambda: seen.append(threading.get_ident()))
            await conn.exec_driver_sql("SELECT whose_thread()")
    finally:
        await db.close()
    assert seen == [threading.get_ident()]


async def test_appends_with_and_without_state_number_events_in_order(db: Database) -> None:
    session = await db.sessions.create_session(app_name="app", user_id="u1", session_id="s1")
    plain = Event(author="user", parts=(Part(text="hi"),))
    stateful = Event(author="bot", actions=EventActions(state_delta={"step": 2}))
    stored = [
        await db.sessions.append_event(session, plain),
        await db.sessions.append_event(session, stateful),
        await db.sessions.append_event(session, plain),
    ]
    assert [e.id for e in stored] == ["e1", "e2", "e3"]
    loaded = await db.sessions.get_session(app_name="app", user_id="u1", session_id="s1")
    assert loaded is not None
    assert [e.id for e in loaded.events] == ["e1", "e2", "e3"]
    assert loaded.state == {"step": 2}


async def test_concurrent_plain_appends_get_distinct_seqs(db: Database) -> None:
    session = await db.sessions.create_session(app_name="app", user_id="u1", session_id="s1")
    stored = await asyncio.gather(
        *(db.sessions.append_event(session, Event(author="user")) for _ in range(20))
    )
    assert sorted(int(e.id[1:]) for e in stored) == list(range(1, 21))


async def test_ensure_exists_creates_a_missing_session_once(db: Database) -> None:
    thread = await db.threads.create(KEY, session_id="s1", app_name="app", user_id="u1", now=1.0)
    await db.sessions.ensure_exists(thread)
    await db.sessions.ensure_exists(thread)  # already there: no error
    session = await db.sessions.of_thread(thread)
    assert session is not None and session.events == []


async def test_a_new_thread_and_its_empty_session_are_one_write(db: Database) -> None:
    writes: list[str] = []
    original = db.gate.write

    async def counted(tx, *args, **kwargs):  # type: ignore[no-untyped-def]
        writes.append(getattr(tx, "__qualname__", "?"))
        return await original(tx, *args, **kwargs)

    db.gate.write = counted  # type: ignore[method-assign]
    thread = await db.threads.create(
        KEY, session_id="s1", app_name="app", user_id="u1", empty_session=True, now=1.0
    )
    assert len(writes) == 1
    session = await db.sessions.of_thread(thread)
    assert session is not None and session.events == [] and session.state == {}
    # A second writer finds the thread mapped: no second session appears.
    again = await db.threads.create(
        KEY, session_id="s2", app_name="app", user_id="u1", empty_session=True, now=2.0
    )
    assert again.session_id == "s1"
    assert await db.sessions.get_session(app_name="app", user_id="u1", session_id="s2") is None


async def test_finish_answered_forgets_the_message_and_touches_the_thread(db: Database) -> None:
    await db.threads.create(KEY, session_id="s1", app_name="app", user_id="u1", now=1.0)
    accepted = await db.inflight.accept(
        MESSAGE, thread_ts="1.0", message={}, delivery_key="d1", owner="me", now=1.0
    )
    assert accepted
    assert not await db.inflight.finish_answered(
        MESSAGE, KEY, owner="someone else", now=5.0, owner_agent="billing"
    )
    assert await db.inflight.count() == 1
    assert await db.inflight.finish_answered(
        MESSAGE, KEY, owner="me", now=9.0, owner_agent="billing"
    )
    assert await db.inflight.count() == 0
    thread = await db.threads.get(KEY)
    assert thread is not None
    assert (thread.last_activity_at, thread.owner_agent) == (9.0, "billing")


async def test_sqlite_transactions_finish_without_yielding_to_the_loop(tmp_path: Path) -> None:
    # A write that yields holds SQLite's writer slot across a loop turn, and under load
    # every other write queues behind it (issue 18's convoy at 20 msg/s).
    db = await Database.open(f"sqlite:///{tmp_path / 'bot.db'}")
    try:
        await db.threads.create(KEY, session_id="s1", app_name="app", user_id="u1", now=1.0)
        await db.threads.get(KEY)  # the pools' first connections open on a thread
        loop_turns: list[int] = []
        asyncio.get_running_loop().call_soon(loop_turns.append, 1)
        await db.threads.touch(KEY, now=2.0, owner_agent="billing")
        await db.threads.get(KEY)
        assert loop_turns == []
    finally:
        await db.close()


async def _accepted(db: Database, owner: str = "me") -> None:
    assert await db.inflight.accept(
        MESSAGE, thread_ts="1.0", message={}, delivery_key="d1", owner=owner, now=1.0
    )


def _start(db: Database, owner: str = "me") -> Any:
    return db.inflight.start_in_append(
        MESSAGE, owner=owner, invocation_id="inv1", now=2.0, stream_ts="2.5"
    )


async def test_a_message_is_started_in_the_write_that_stores_its_users_event(
    db: Database,
) -> None:
    session = await db.sessions.create_session(app_name="app", user_id="u1", session_id="s1")
    await _accepted(db)
    writes: list[object] = []
    original = db.gate.write

    async def counted(tx, *args, **kwargs):  # type: ignore[no-untyped-def]
        writes.append(tx)
        return await original(tx, *args, **kwargs)

    db.gate.write = counted  # type: ignore[method-assign]
    said = Event(author="user", invocation_id="inv1", parts=(Part(text="hi"),))
    await db.sessions.append_event(session, said, along=_start(db))
    assert len(writes) == 1
    [row] = await db.inflight.left_by_others("nobody", now=3.0, dead_after=None)
    assert (row.stage, row.invocation_id, row.stream_ts) == ("started", "inv1", "2.5")
    # Scoped to its call: the invocation's next append (its reply) is a plain append,
    # which a takeover of the row does not stop.
    await db.inflight.take_over(row, owner="peer", now=3.0, dead_after=None)
    await db.sessions.append_event(session, Event(author="bot", invocation_id="inv1"))
    assert len(writes) == 3


async def test_a_message_taken_over_or_a_failed_append_leaves_no_half(db: Database) -> None:
    session = await db.sessions.create_session(app_name="app", user_id="u1", session_id="s1")
    await _accepted(db)
    [row] = await db.inflight.left_by_others("nobody", now=3.0, dead_after=None)
    assert await db.inflight.take_over(row, owner="peer", now=3.0, dead_after=None)
    # Taken over: this process stores no user event (the peer's turn will).
    with pytest.raises(MessageTakenOverError):
        await db.sessions.append_event(
            session, Event(author="user", invocation_id="inv1"), along=_start(db)
        )
    stored = await db.sessions.get_session(app_name="app", user_id="u1", session_id="s1")
    assert stored is not None and stored.events == []
    # An append that fails (its session is gone) does not mark the message started.
    [row] = await db.inflight.left_by_others("nobody", now=3.0, dead_after=None)
    assert row.stage == "accepted"
    await db.sessions.delete_session(app_name="app", user_id="u1", session_id="s1")
    with pytest.raises(SessionNotFoundError):
        await db.sessions.append_event(
            session, Event(author="user", invocation_id="inv1"), along=_start(db, owner="peer")
        )
    [row] = await db.inflight.left_by_others("nobody", now=3.0, dead_after=None)
    assert (row.stage, row.invocation_id) == ("accepted", None)
