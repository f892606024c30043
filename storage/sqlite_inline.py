"""SQLite driven from the event loop's own thread.

aiosqlite runs every call (cursor, execute, fetch, close, commit) on a worker thread and
wakes the event loop for each result. A short transaction is a dozen such hand-offs, and
under load they cost more CPU than SQLite itself: profiling the Slack load benchmark put
about 40% of the bot's CPU on them (`bench/slack_load.py`). Our statements touch a
handful of rows by key and take microseconds, so `InlineConnection` keeps aiosqlite's
interface (which SQLAlchemy's `sqlite+aiosqlite` dialect speaks) but runs each call
directly. aiosqlite's thread stays only for opening the connection.

The one way a call could block is waiting for another process's write lock, so inline
connections get a short `busy_timeout` (`INLINE_BUSY_TIMEOUT_MS`); `SqlGate.write` then
retries with an asynchronous backoff instead of holding up the loop.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import partial
from typing import Any

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite
from sqlalchemy.engine import URL

# Long enough to ride out a checkpoint, short enough not to stall the event loop.
INLINE_BUSY_TIMEOUT_MS = 50


class InlineConnection(aiosqlite.Connection):
    """An aiosqlite connection whose calls run on the caller's thread."""

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._running or not self._connection:
            raise ValueError("Connection closed")
        return fn(*args, **kwargs)

    def begin(self, *, immediate: bool) -> None:
        """Open a transaction now, straight on the sqlite3 connection (no cursor, no
        statement machinery: SQLAlchemy's `begin` event runs this on every transaction)."""
        self._conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")


def inline_creator(url: URL) -> Callable[[], Any]:
    """An `async_creator` for `create_async_engine`: opens `url` (plain paths, URI
    filenames and `:memory:` alike) as an `InlineConnection`."""
    args, params = SQLiteDialect_aiosqlite().create_connect_args(url)
    params["check_same_thread"] = False  # opened on aiosqlite's thread, used on the loop's

    async def connect() -> InlineConnection:
        connection = InlineConnection(partial(sqlite3.connect, *args, **params), 64)
        connection._thread.daemon = True
        await connection
        return connection

    return connect
