"""Owners, guards and thread locks as two processes see them: two engines on one real
database (SQLite file and PostgreSQL)."""

from __future__ import annotations

import asyncio
import time
import uuid

from bot.threads.turn import ensure_thread
from storage import Database
from storage.delivery.inflight import InflightKey
from storage.threads import ThreadKey

DEAD_AFTER = 30.0


async def accept(db: Database, ts: str, owner: str, *, now: float) -> InflightKey:
    key = InflightKey(team_id="T1", channel_id="C1", message_ts=ts)
    assert await db.inflight.accept(
        key,
        thread_ts=ts,
        message={"user": "U1", "text": "hi"},
        delivery_key=f"message:T1:C1:{ts}",
        owner=owner,
        now=now,
    )
    return key


async def test_live_owners_rows_are_never_taken_however_old(db: Database) -> None:
    now = time.time()
    # Accepted an hour ago (a backlog, a slow model), and its owner still beats.
    key = await accept(db, "100.1", "busy", now=now - 3600)
    await db.owners.beat("busy", now=now)
    assert await db.inflight.left_by_others("peer", now=now, dead_after=DEAD_AFTER) == []
    (row,) = await db.inflight.left_by_others("peer", now=now, dead_after=None)
    assert not await db.inflight.take_over(row, owner="peer", now=now, dead_after=DEAD_AFTER)
    # It stops beating: the row is the peer's, and the old owner can no longer touch it.
    later = now + DEAD_AFTER + 1
    (row,) = await db.inflight.left_by_others("peer", now=later, dead_after=DEAD_AFTER)
    assert await db.inflight.take_over(row, owner="peer", now=later, dead_after=DEAD_AFTER)
    assert not await db.inflight.start(
        key, owner="busy", invocation_id="i1", now=later, placeholder_ts="100.2"
    )
    assert not await db.inflight.finish(key, owner="busy")
    assert await db.inflight.start(key, owner="peer", invocation_id="i2", now=later)
    assert await db.inflight.finish(key, owner="peer")
    assert await db.inflight.count() == 0


async def test_owner_that_never_beat_or_stopped_cleanly_is_dead(db: Database) -> None:
    now = time.time()
    await accept(db, "100.1", "never-beat", now=now)
    await accept(db, "100.2", "stopped", now=now)
    await db.owners.beat("stopped", now=now)
    await db.owners.stop("stopped")
    rows = await db.inflight.left_by_others("peer", now=now, dead_after=DEAD_AFTER)
    assert sorted(r.owner for r in rows) == ["never-beat", "stopped"]


async def test_first_messages_of_a_thread_from_two_processes_share_one_session(
    db_url: str,
) -> None:
    first, second = await Database.open(db_url), await Database.open(db_url)
    try:
        keys = [ThreadKey(team_id="T1", channel_id="C1", thread_ts=f"{n}.1") for n in range(40)]

        async def open_thread(db: Database, key: ThreadKey) -> str:
            record = await ensure_thread(
                db, key, None, new_session_id=uuid.uuid4().hex, app_name="support", user_id="U1"
            )
            session = await db.sessions.ensure_of_thread(record)
            return session.id

        pairs = await asyncio.gather(
            *(asyncio.gather(open_thread(first, key), open_thread(second, key)) for key in keys)
        )
    finally:
        await first.close()
        await second.close()
    assert all(a == b for a, b in pairs)


async def test_thread_lock_excludes_other_processes(postgres_url: str) -> None:
    first, second = await Database.open(postgres_url), await Database.open(postgres_url)
    key = ThreadKey(team_id="T1", channel_id="C1", thread_ts="100.1")
    other = ThreadKey(team_id="T1", channel_id="C1", thread_ts="200.1")
    order: list[str] = []

    async def invocation(db: Database, thread: ThreadKey, name: str, hold: float) -> None:
        async with db.thread_locks.hold(thread):
            order.append(f"{name} start")
            await asyncio.sleep(hold)
            order.append(f"{name} end")

    try:
        holder = asyncio.create_task(invocation(first, key, "a", 0.5))
        await asyncio.sleep(0.1)
        await asyncio.gather(invocation(second, key, "b", 0.0), invocation(second, other, "c", 0.0))
        await holder
    finally:
        await first.close()
        await second.close()
    assert order.index("b start") > order.index("a end")
    assert order.index("c end") < order.index("a end")


async def test_thread_lock_is_released_when_its_process_dies(postgres_url: str) -> None:
    dbs = [await Database.open(postgres_url) for _ in range(2)]
    key = ThreadKey(team_id="T1", channel_id="C1", thread_ts="100.1")
    try:
        entered = asyncio.Event()

        async def dies_holding() -> None:
            async with dbs[0].thread_locks.hold(key):
                entered.set()
                await asyncio.sleep(3600)

        holder = asyncio.create_task(dies_holding())
        await entered.wait()
        await dbs[0].thread_locks.close()  # the connection is gone, as with SIGKILL
        holder.cancel()
        async with asyncio.timeout(10):
            async with dbs[1].thread_locks.hold(key):
                pass
    finally:
        for db in dbs:
            await db.close()


async def test_many_thread_locks_at_once_are_each_taken_and_given_back(postgres_url: str) -> None:
    # One process's lock calls go to PostgreSQL in batches: each answer must reach its
    # own caller, and a caller cancelled while its lock is on the way must not keep it.
    first, second = await Database.open(postgres_url), await Database.open(postgres_url)
    keys = [ThreadKey(team_id="T1", channel_id="C1", thread_ts=f"{n}.1") for n in range(30)]
    held, all_in = asyncio.Event(), asyncio.Event()
    entered: list[ThreadKey] = []

    async def invocation(key: ThreadKey) -> None:
        async with first.thread_locks.hold(key):
            entered.append(key)
            if len(entered) == len(keys):
                all_in.set()
            await held.wait()

    try:
        tasks = [asyncio.create_task(invocation(key)) for key in keys]
        cancelled = asyncio.create_task(
            invocation(ThreadKey(team_id="T1", channel_id="C2", thread_ts="1.1"))
        )
        await asyncio.sleep(0)
        cancelled.cancel()
        async with asyncio.timeout(10):
            await all_in.wait()
        blocked = asyncio.create_task(invocation_on(second, keys[7]))
        await asyncio.sleep(0.3)
        assert not blocked.done()  # the first process still holds it
        held.set()
        await asyncio.gather(*tasks)
        async with asyncio.timeout(10):
            await blocked
            for key in [*keys, ThreadKey(team_id="T1", channel_id="C2", thread_ts="1.1")]:
                async with second.thread_locks.hold(key):
                    pass
    finally:
        await first.close()
        await second.close()
    assert sorted(entered, key=lambda k: float(k.thread_ts)) == keys


async def invocation_on(db: Database, key: ThreadKey) -> None:
    async with db.thread_locks.hold(key):
        pass
