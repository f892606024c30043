"""WAL checkpoints run on a worker thread after writes, never inside a commit on the
event loop (`storage.checkpoints`)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from storage import Database
from storage.delivery.inflight import InflightKey


async def _accept_many(db: Database, count: int, *, start: int = 0) -> None:
    for n in range(start, start + count):
        await db.inflight.accept(
            InflightKey(team_id="T1", channel_id=f"D{n % 50}", message_ts=f"{n}.000100"),
            thread_ts=f"{n}.000100",
            message={"text": "x" * 4000},  # about a page each
            delivery_key=f"message:T1:D{n % 50}:{n}",
            owner="p1",
            now=time.time(),
        )


async def test_checkpoints_leave_commits_alone(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    db = await Database.open(f"sqlite+aiosqlite:///{path}")
    try:
        checkpoints = db.gate.checkpoints
        assert checkpoints is not None
        checkpoints.interval, checkpoints.max_writes = 3600.0, 10**9
        before = path.stat().st_size
        # Past SQLite's own threshold (1,000 pages), where a commit used to checkpoint.
        await _accept_many(db, 1200)
        assert path.stat().st_size == before
        await checkpoints.run()
        assert path.stat().st_size > before + 1200 * 4000
        assert await db.inflight.count() == 1200
    finally:
        await db.close()


async def _first_checkpoint(checkpoints: Any) -> int:
    """How many checkpoints ran, once the first has (or after 5 s)."""
    for _ in range(500):
        if checkpoints.done:
            break
        await asyncio.sleep(0.01)
    return int(checkpoints.done)


async def test_checkpoints_follow_writes_within_their_interval(tmp_path: Path) -> None:
    db = await Database.open(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    try:
        checkpoints = db.gate.checkpoints
        assert checkpoints is not None
        checkpoints.interval = 0.01
        await db.inflight.count()  # a read: nothing to copy
        await asyncio.sleep(0.05)
        assert checkpoints.done == 0
        await _accept_many(db, 3)
        assert await _first_checkpoint(checkpoints) == 1
    finally:
        await db.close()


async def test_checkpoints_come_sooner_after_many_writes(tmp_path: Path) -> None:
    db = await Database.open(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    try:
        checkpoints = db.gate.checkpoints
        assert checkpoints is not None
        checkpoints.interval, checkpoints.max_writes = 3600.0, 5
        await _accept_many(db, 4)
        await asyncio.sleep(0.05)
        assert checkpoints.done == 0
        await _accept_many(db, 1, start=4)
        assert await _first_checkpoint(checkpoints) == 1
    finally:
        await db.close()


async def test_in_memory_database_has_no_checkpoints() -> None:
    db = await Database.open("sqlite+aiosqlite:///:memory:")
    try:
        assert db.gate.checkpoints is None
    finally:
        await db.close()
