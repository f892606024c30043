"""SQLite WAL checkpoints on a worker thread, not inside a commit on the event loop.

By default SQLite checkpoints in the commit that takes the WAL past 1,000 pages: that
commit copies the pages into the database file and syncs it. Our connections run on the
event loop's thread (`storage.sqlite_inline`), so every task waited meanwhile: one commit
in about 60 took 1 to 25 ms (p99 5-8 ms, p50 0.02 ms, at the bot's write mix), enough to
put every ack and reply in flight behind it. The connections `SqlGate` writes through
therefore checkpoint nothing themselves (`wal_autocheckpoint=0`, set where the engine
opens them), and `WalCheckpoints` runs a PASSIVE checkpoint on a connection of its own,
in a worker thread (sqlite3 lets go of the GIL while SQLite works), `INTERVAL_S` after
the first write since the last one (or after `MAX_WRITES` writes). PASSIVE waits for no
reader or writer. A checkpoint comes in two passes: the first copies the WAL with the
writers going on; the second, holding this process's writer slot (the loop keeps
running, writes queue), copies the few frames written meanwhile, so that the WAL is then
wholly in the file and the next write starts it over. Without that second pass, under a
steady stream of writes no checkpoint ever caught up and the WAL grew without end
(764 MB in a 20,000-transaction test). A process with no writes does nothing; closing
the last connection checkpoints what is left, as SQLite always does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from functools import partial

from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite
from sqlalchemy.engine import URL

log = logging.getLogger(__name__)

# A checkpoint follows the first write since the last one by `INTERVAL_S`, or comes as
# soon as `MAX_WRITES` more writes are in (a write is about 5 pages): the WAL stays under
# about 20 MB, and a page written many times meanwhile is copied once. Against SQLite's
# own 1,000 pages this cost 3 % less CPU per write in a 20,000-transaction test.
INTERVAL_S = 1.0
MAX_WRITES = 1000


class WalCheckpoints:
    """Checkpoints the WAL of the SQLite file at `url` in the background, after writes;
    `writer_slot` is the slot this process's writes take (`storage.writer_lock.WriterLock`)."""

    def __init__(
        self,
        url: URL,
        writer_slot: Callable[[], AbstractAsyncContextManager[None]],
        *,
        interval: float = INTERVAL_S,
        max_writes: int = MAX_WRITES,
    ) -> None:
        args, params = SQLiteDialect_aiosqlite().create_connect_args(url)
        params.update(check_same_thread=False, isolation_level=None)
        self._connect = partial(sqlite3.connect, *args, **params)
        self._writer_slot = writer_slot
        self.interval = interval
        self.max_writes = max_writes
        self._writes = 0
        self._conn: sqlite3.Connection | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._running: asyncio.Task[None] | None = None
        self._closed = False
        self.done = 0  # checkpoints run, for tests and curiosity

    def wrote(self) -> None:
        """A write was committed: checkpoint within `interval`, or now once `max_writes`
        are waiting."""
        self._writes += 1
        if self._closed:
            return
        if self._writes >= self.max_writes and not self._copying():
            self._start()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.interval, self._due)

    def _copying(self) -> bool:
        return self._running is not None and not self._running.done()

    def _due(self) -> None:
        self._timer = None
        if self._copying():  # still copying: look again after another interval
            self._timer = asyncio.get_running_loop().call_later(self.interval, self._due)
        else:
            self._start()

    def _start(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._writes = 0
        self._running = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        """One checkpoint now, its passes on a worker thread; a failure is logged."""
        try:
            await asyncio.to_thread(self._run)
            if self._writes:  # frames came in meanwhile
                async with self._writer_slot():
                    await asyncio.to_thread(self._run)
            self.done += 1
        except sqlite3.Error as exc:
            # Nothing is lost: the frames stay in the WAL for the next checkpoint.
            log.warning("WAL checkpoint failed: %s", exc)

    def _run(self) -> None:
        if self._conn is None:
            self._conn = self._connect()
        self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    async def close(self) -> None:
        """Stop: cancel a due checkpoint, wait for a running one, close the connection."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._running is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._running)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
