"""SQLite driven from the event loop's own thread.

aiosqlite runs every call (cursor, execute, fetch, close, commit) on a worker thread and
wakes the event loop for each result. A short transaction is a dozen such hand-offs, and
under load they cost more CPU than SQLite itself: profiling the Slack load benchmark put
about 40% of the bot's CPU on them (`bench/slack_load.py`). Our statements touch a
handful of rows by key and take microseconds, so `InlineConnection` keeps aiosqlite's
interface (which SQLAlchemy's `sqlite+aiosqlite` dialect speaks) but runs each call
directly. aiosqlite's thread stays only for opening the connection.

`inline_transaction` also begins and ends the transaction on the `sqlite3` connection
itself: SQLAlchemy's `AsyncConnection.begin()` and its commit cost more than the
statements of a turn's short transactions (about a fifth of the storage time per message
under `bench/slack_load.py`, two greenlet switches, events and a pool reset for each).

The one way a call could block is waiting for another process's write lock, so inline
connections get a short `busy_timeout` (`INLINE_BUSY_TIMEOUT_MS`); `SqlGate.write` then
retries with an asynchronous backoff instead of holding up the loop.

Private names, and how they are fenced. aiosqlite has no public hook for where a call
runs, so `InlineConnection` relies on three of its private names: it overrides
`Connection._execute` (every call of a connection and its cursors goes through it),
keeps its closed check (`_running`, `_connection`), and marks its worker thread
(`_thread`) a daemon, as SQLAlchemy's own `sqlite+aiosqlite` connect does. The `sqlite3`
connection itself is the one our connector opened (`InlineConnection.sqlite`), not
aiosqlite's. `pyproject.toml` pins aiosqlite below its next minor release, and
`tests/storage/test_library_contract.py` fails, naming the attribute, when any of the
three changes or disappears.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite
from sqlalchemy.engine import URL
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection

# Long enough to ride out a checkpoint, short enough not to stall the event loop.
INLINE_BUSY_TIMEOUT_MS = 50
# aiosqlite's default rows per fetch when a cursor is iterated.
_ITER_CHUNK_SIZE = 64


class InlineConnection(aiosqlite.Connection):
    """An aiosqlite connection whose calls run on the caller's thread; `connect` opens
    the `sqlite3` connection (on aiosqlite's thread, when the connection is awaited)."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._inline_sqlite: sqlite3.Connection | None = None

        def connector() -> sqlite3.Connection:
            self._inline_sqlite = connect()
            return self._inline_sqlite

        super().__init__(connector, _ITER_CHUNK_SIZE)
        # As SQLAlchemy's own connect does: a connection left open never holds up exit.
        self._thread.daemon = True

    @property
    def sqlite(self) -> sqlite3.Connection:
        """The `sqlite3` connection, once the connection has been awaited."""
        if self._inline_sqlite is None:
            raise ValueError("no active connection")
        return self._inline_sqlite

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._running or not self._connection:
            raise ValueError("Connection closed")
        return fn(*args, **kwargs)

    def begin(self, *, immediate: bool) -> None:
        """Open a transaction now, straight on the sqlite3 connection (no cursor, no
        statement machinery: SQLAlchemy's `begin` event runs this when it begins one),
        unless `inline_transaction` has opened it already."""
        if not self.sqlite.in_transaction:
            self.sqlite.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")


def sqlite3_connection(conn: AsyncConnection) -> sqlite3.Connection:
    """The `sqlite3` connection under an inline SQLAlchemy connection."""
    driver = conn.sync_connection.connection.driver_connection  # type: ignore[union-attr]
    assert isinstance(driver, InlineConnection)
    return driver.sqlite


def _run(raw: sqlite3.Connection, sql: str) -> None:
    try:
        raw.execute(sql)
    except sqlite3.Error as exc:
        # Wrapped as SQLAlchemy wraps a statement's error, so "locked" is retried.
        raise OperationalError(sql, None, exc) from exc


@contextlib.asynccontextmanager
async def inline_transaction(
    conn: AsyncConnection, *, immediate: bool
) -> AsyncIterator[AsyncConnection]:
    """One transaction on an inline connection, begun (`BEGIN IMMEDIATE` for a writer)
    and committed, or rolled back on an error, on the `sqlite3` connection directly.

    Statements run as `storage.prepared.Prepared` never tell SQLAlchemy; one executed
    through `conn.execute` makes SQLAlchemy begin its own transaction on top, whose
    `begin` event finds this one open and adds nothing (`InlineConnection.begin`), and
    which is then committed or rolled back through SQLAlchemy, ending this one with it.
    """
    raw = sqlite3_connection(conn)
    _run(raw, "BEGIN IMMEDIATE" if immediate else "BEGIN")
    try:
        yield conn
        if conn.in_transaction():
            await conn.commit()
        elif raw.in_transaction:
            _run(raw, "COMMIT")
    except BaseException:
        if conn.in_transaction():
            await conn.rollback()
        if raw.in_transaction:
            raw.rollback()
        raise


def inline_creator(url: URL) -> Callable[[], Any]:
    """An `async_creator` for `create_async_engine`: opens `url` (plain paths, URI
    filenames and `:memory:` alike) as an `InlineConnection`."""
    args, params = SQLiteDialect_aiosqlite().create_connect_args(url)
    params["check_same_thread"] = False  # opened on aiosqlite's thread, used on the loop's

    async def connect() -> InlineConnection:
        connection = InlineConnection(partial(sqlite3.connect, *args, **params))
        await connection
        return connection

    return connect
