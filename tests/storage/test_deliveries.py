"""Slack deliveries are accepted exactly once, even when raced."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from agents.events import Event
from storage import Database
from storage.threads import ThreadKey


async def test_delivery_first_of_concurrent_duplicates_wins(db: Database) -> None:
    keys = [f"Ev{n:04d}" for n in range(100)] * 10
    random.Random(7).shuffle(keys)

    accepted = await asyncio.gather(*(db.deliveries.first_delivery(k, now=1.0) for k in keys))

    winners = [key for key, ok in zip(keys, accepted, strict=True) if ok]
    assert len(winners) == 100
    assert len(set(winners)) == 100


async def test_delivery_is_remembered_until_purged(db: Database) -> None:
    assert await db.deliveries.first_delivery("old", now=100.0)
    assert await db.deliveries.first_delivery("new", now=200.0)
    assert not await db.deliveries.first_delivery("old", now=150.0)

    assert await db.deliveries.purge(older_than=150.0) == 1

    assert await db.deliveries.first_delivery("old", now=300.0)
    assert not await db.deliveries.first_delivery("new", now=300.0)


async def test_delivery_accepts_are_group_committed_and_exactly_once(db: Database) -> None:
    from storage.delivery.inflight import InflightKey

    # 1,000 racing accepts of 100 messages (10 deliveries each), on two engines, as two
    # processes would: each message is accepted exactly once and stored once.
    other = await Database.open(db.url)
    try:
        messages = [f"{1700000000 + n}.000100" for n in range(100)] * 10
        random.Random(3).shuffle(messages)
        accepts = [
            (db if n % 2 else other).inflight.accept(
                InflightKey(team_id="T1", channel_id="C1", message_ts=ts),
                thread_ts=ts,
                message={"user": "U1", "text": f"hello {ts}"},
                delivery_key=f"message:T1:C1:{ts}",
                owner=f"proc-{n % 2}",
                now=1.0,
            )
            for n, ts in enumerate(messages)
        ]
        accepted = await asyncio.gather(*accepts)
    finally:
        await other.close()
    winners = [ts for ts, ok in zip(messages, accepted, strict=True) if ok]
    assert sorted(winners) == sorted(set(messages))
    left = await db.inflight.left_by_others("nobody", now=2.0, dead_after=None)
    assert sorted(r.message_ts for r in left) == sorted(set(messages))


def _accept(db: Database, ts: str) -> Any:
    from storage.delivery.inflight import InflightKey

    return db.inflight.accept(
        InflightKey(team_id="T1", channel_id="D1", message_ts=ts),
        thread_ts=ts,
        message={"user": "U1", "text": f"hello {ts}"},
        delivery_key=f"message:T1:D1:{ts}",
        owner="proc-1",
        now=1.0,
    )


async def test_a_sqlite_accept_writes_without_yielding_to_the_loop(tmp_path: Path) -> None:
    """The ack waits for no loop turn: with nothing else writing, the accept's coroutine
    runs to its end in one step (no flusher task to start, none to wake it)."""
    db = await Database.open(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    try:
        assert await _accept(db, "1700000000.000100")  # opens the writing connection
        step = _accept(db, "1700000000.000200")
        with pytest.raises(StopIteration) as done:
            step.send(None)
        assert done.value.value is True
        left = await db.inflight.left_by_others("nobody", now=2.0, dead_after=None)
        assert sorted(r.message_ts for r in left) == ["1700000000.000100", "1700000000.000200"]
    finally:
        await db.close()


async def test_a_sqlite_accept_cancelled_while_waiting_to_write_hands_its_batch_on(
    tmp_path: Path,
) -> None:
    """An accept cancelled before its batch commits (here: waiting for the writer slot)
    leaves the batch to a flusher task: the accepts queued behind it are answered, and
    the cancelled one's message is stored as a shielded accept's would be."""
    db = await Database.open(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    try:
        assert await _accept(db, "1700000000.000100")
        release = asyncio.Event()
        held = asyncio.Event()

        async def writer() -> None:
            async with db.gate._sqlite_writer.hold():
                held.set()
                await release.wait()

        holder = asyncio.create_task(writer())
        await held.wait()
        first = asyncio.create_task(_accept(db, "1700000000.000200"))
        await asyncio.sleep(0)
        second = asyncio.create_task(_accept(db, "1700000000.000300"))
        await asyncio.sleep(0)
        first.cancel()
        await asyncio.sleep(0)
        release.set()
        await holder
        assert await asyncio.wait_for(second, 10) is True
        assert first.cancelled()
        await asyncio.sleep(0.05)
        left = await db.inflight.left_by_others("nobody", now=2.0, dead_after=None)
        assert sorted(r.message_ts for r in left) == [
            "1700000000.000100",
            "1700000000.000200",
            "1700000000.000300",
        ]
        # A redelivery of any of them is a duplicate, and the next accept is written at once.
        assert await _accept(db, "1700000000.000200") is False
        assert await _accept(db, "1700000000.000400") is True
    finally:
        await db.close()


async def test_stream_is_recorded_and_the_finish_rewrites_the_reply_in_place(db: Database) -> None:
    """`set_stream` records the streamed message of a started message (for its owner
    only), and `finish_answered(also=sessions.rewrite_in(...))` stores the reply again,
    with what the transport learnt, in the same transaction as the finish."""
    from storage.delivery.inflight import InflightKey

    session = await db.sessions.create_session(app_name="app", user_id="U1", session_id="s1")
    key = InflightKey(team_id="T1", channel_id="D1", message_ts="100.1")
    thread = ThreadKey(team_id="T1", channel_id="D1", thread_ts="100.1")
    record = await db.threads.create(thread, session_id="s1", app_name="app", user_id="U1", now=1.0)
    await _accept(db, "100.1")
    assert await db.inflight.start(key, owner="proc-1", invocation_id="inv", now=2.0)
    assert await db.inflight.set_stream(key, owner="proc-1", stream_ts="100.2")
    assert not await db.inflight.set_stream(key, owner="proc-2", stream_ts="100.9")
    [row] = await db.inflight.left_by_others("proc-3", now=3.0, dead_after=None)
    assert (row.stream_ts, row.placeholder_ts) == ("100.2", None)

    await db.sessions.append_event(session, Event(author="user", invocation_id="inv"))
    reply = await db.sessions.append_event(
        session, Event(author="support", invocation_id="inv", custom_metadata={"k": 1})
    )
    shown = reply.with_metadata(slack_ts="100.2")
    also = db.sessions.rewrite_in(record, shown)
    finished = await db.inflight.finish_answered(
        key, thread, owner="proc-1", now=4.0, owner_agent="support", also=also
    )
    assert finished and await db.inflight.count() == 0
    stored = await db.sessions.get_session(app_name="app", user_id="U1", session_id="s1")
    assert stored is not None
    assert [dict(e.custom_metadata) for e in stored.events] == [{}, {"k": 1, "slack_ts": "100.2"}]
    assert stored.events[1].id == reply.id
