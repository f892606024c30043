"""Engine creation and the transaction gate every store writes through.

SQLite: WAL, `busy_timeout`, foreign keys, and write transactions that start with
`BEGIN IMMEDIATE`, so a writer takes the lock up front instead of failing to upgrade a
read lock half-way ("database is locked"). Connections run on the event loop's thread
(`storage.sqlite_inline`). SQLite has one writer at a time, so writes from this process
also queue on one asyncio lock, which subsumes a per-session lock and is cheaper than
polling the busy handler; other processes are covered by a short `busy_timeout` and a
bounded retry with asynchronous backoff. PostgreSQL: a pooled engine; callers take row
locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from storage.checkpoints import WalCheckpoints
from storage.errors import StorageReadError, StorageWriteError
from storage.sqlite_inline import (
    INLINE_BUSY_TIMEOUT_MS,
    InlineConnection,
    inline_creator,
    inline_transaction,
)
from storage.writer_lock import WriterLock

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_WRITE_ATTEMPTS = 12
_RETRY_BASE_DELAY_S = 0.02
# With the cap, the attempts wait out another process's write lock for about 6 s.
_RETRY_MAX_DELAY_S = 1.0
# "deadlock detected" and "could not serialize access": safe to rerun the transaction.
_PG_RETRYABLE_SQLSTATES = {"40P01", "40001"}
# "disk full", "read-only transaction" and "insufficient resources".
_PG_REFUSED_WRITE_SQLSTATES = {"53100", "25006", "53000"}


def normalize_url(url: str | URL) -> URL:
    """Map plain `sqlite://` and `postgresql://` URLs to their async drivers."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite" and parsed.drivername != "sqlite+aiosqlite":
        return parsed.set(drivername="sqlite+aiosqlite")
    if backend in ("postgresql", "postgres") and parsed.drivername != "postgresql+asyncpg":
        return parsed.set(drivername="postgresql+asyncpg")
    return parsed


def display_url(url: URL) -> str:
    """The URL without its password, for messages."""
    return url.render_as_string(hide_password=True)


# A statement's parameters are people's words: an error (and its log line) names the
# statement, never the values bound to it.
HIDE_PARAMETERS = True


def create_engine(url: str | URL) -> AsyncEngine:
    """An async engine configured for the backend named by `url`."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed)
    return _postgres_engine(parsed, pool_size=10, max_overflow=10)


def _postgres_engine(url: URL, *, pool_size: int, max_overflow: int) -> AsyncEngine:
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_timeout=60,
        hide_parameters=HIDE_PARAMETERS,
    )
    _ping_when_idle(engine)
    return engine


# A connection used this recently is taken to be alive.
_IDLE_BEFORE_PING_S = 5.0


def _ping_when_idle(engine: AsyncEngine) -> None:
    """Check a pooled connection before use only when it sat idle.

    SQLAlchemy's `pool_pre_ping` checks every checkout, and on asyncpg its check is three
    round trips (BEGIN, an empty statement, ROLLBACK): more than most of our transactions
    and over half of a message's round trips (issue 18). A connection that finished a
    transaction seconds ago is known good; one idle for longer is pinged, and a dead one
    is replaced, since the pool retries a checkout that raises `DisconnectionError`.
    """
    sync_engine = engine.sync_engine

    @sa_event.listens_for(sync_engine, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @sa_event.listens_for(sync_engine, "checkout")
    def _checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("idle_since")
        if since is None or time.monotonic() - since < _IDLE_BEFORE_PING_S:
            return
        try:
            sync_engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError("connection failed its ping") from exc


def _is_memory(url: URL) -> bool:
    return url.database in (None, "", ":memory:")


def _sqlite_engine(url: URL, **pool: Any) -> AsyncEngine:
    in_memory = _is_memory(url)
    # An in-memory database exists per connection, so every user must share one.
    kwargs: dict[str, Any] = {"poolclass": StaticPool} if in_memory else pool
    engine = create_async_engine(
        url, async_creator=inline_creator(url), hide_parameters=HIDE_PARAMETERS, **kwargs
    )

    @sa_event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take over BEGIN from the driver so writes can say BEGIN IMMEDIATE.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if not in_memory:
            cursor.execute("PRAGMA journal_mode=WAL")
            # Checkpoints run on a worker thread, not in a commit (`storage.checkpoints`).
            cursor.execute("PRAGMA wal_autocheckpoint=0")
        cursor.execute(f"PRAGMA busy_timeout={INLINE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @sa_event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        immediate = conn.get_execution_options().get("sqlite_immediate", False)
        driver = conn.connection.driver_connection
        assert isinstance(driver, InlineConnection)
        try:
            driver.begin(immediate=immediate)
        except sqlite3.Error as exc:
            # Wrapped as SQLAlchemy wraps a statement's error, so "locked" is retried.
            raise OperationalError("BEGIN", None, exc) from exc

    return engine


def is_retryable(exc: BaseException) -> bool:
    """True for lock contention that a fresh transaction can get past."""
    if not isinstance(exc, DBAPIError):
        return False
    message = str(exc.orig).lower()
    if "database is locked" in message or "database is busy" in message:
        return True
    sqlstate = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return sqlstate in _PG_RETRYABLE_SQLSTATES


class SqlGate:
    """Runs read and write transactions against one engine, the right way per backend."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.is_sqlite = engine.dialect.name == "sqlite"
        self._own_writer: AsyncEngine | None = None
        self._read_engine = engine
        self._write_engine = engine
        self._urgent_engine = engine
        if self.is_sqlite:
            if not _is_memory(engine.url):
                # SQLite has one writer anyway; giving it its own connection means a write
                # (a delivery ack, say) never queues for a pooled connection behind reads.
                self._own_writer = _sqlite_engine(engine.url, pool_size=1, max_overflow=0)
            writer = self._own_writer or engine
            self._write_engine = writer.execution_options(sqlite_immediate=True)  # type: ignore[assignment]
        else:
            # Urgent writes (a delivery's acceptance, before the ack) get connections of
            # their own: behind a busy pool's invocation traffic, PostgreSQL acks took
            # 1.5 s at 40 messages a second (issue 18).
            self._own_writer = self._urgent_engine = _postgres_engine(
                engine.url, pool_size=2, max_overflow=0
            )
            # Under READ COMMITTED every statement sees its own snapshot whether or not a
            # transaction wraps them, so reads skip BEGIN and COMMIT: two round trips of
            # the four a one-statement read took.
            self._read_engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._sqlite_writer = WriterLock()
        # A SQLite file's WAL is checkpointed off the event loop (`storage.checkpoints`).
        file = self.is_sqlite and self._own_writer is not None
        self.checkpoints = WalCheckpoints(engine.url, self._sqlite_writer.hold) if file else None
        # SQLite file: one reading and one writing connection kept checked out between
        # transactions (see `_connect`).
        self._kept: dict[str, AsyncConnection] | None = (
            {} if self.is_sqlite and self._own_writer is not None else None
        )

    async def close(self) -> None:
        """Release the writers' own connections (the caller disposes `engine`)."""
        if self.checkpoints is not None:
            await self.checkpoints.close()
        for conn in list((self._kept or {}).values()):
            await conn.close()
        self._kept = None
        if self._own_writer is not None:
            await self._own_writer.dispose()

    def insert(self, table: sa.Table) -> Any:
        """A dialect `INSERT` with `on_conflict_do_nothing` / `on_conflict_do_update`."""
        if self.is_sqlite:
            return sqlite.insert(table)
        return postgresql.insert(table)

    async def read(self, fn: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        """Run `fn` in one read transaction (a consistent snapshot on SQLite WAL; on
        PostgreSQL, whose default READ COMMITTED gives each statement its own snapshot
        anyway, without BEGIN and COMMIT).

        Database failures surface as `StorageReadError`, a `SessionStoreError`, so the
        agent runtime lets them escape an invocation without knowing the database.
        """
        try:
            async with self._connect(self._read_engine, keep="read") as conn:
                if self.is_sqlite:
                    async with inline_transaction(conn, immediate=False):
                        return await fn(conn)
                async with conn.begin():
                    return await fn(conn)
        except (SQLAlchemyError, OSError) as exc:
            raise StorageReadError(f"the database read failed: {first_line(exc)}") from exc

    async def write(
        self, fn: Callable[[AsyncConnection], Awaitable[T]], *, urgent: bool = False
    ) -> T:
        """Run `fn` in one write transaction, retried whole on lock contention.

        `fn` must only touch the database: it may run more than once. `urgent` writes
        (acknowledging a delivery) go ahead of queued ones on SQLite.
        """
        for attempt in range(1, MAX_WRITE_ATTEMPTS + 1):
            try:
                if self.is_sqlite:
                    async with self._sqlite_writer.hold(urgent=urgent):
                        result = await self._write_once(self._write_engine, fn, keep="write")
                    if self.checkpoints is not None:
                        self.checkpoints.wrote()
                    return result
                engine = self._urgent_engine if urgent else self._write_engine
                return await self._write_once(engine, fn)
            except DBAPIError as exc:
                if not is_retryable(exc) or attempt == MAX_WRITE_ATTEMPTS:
                    raise _write_error(exc) from exc
                backoff = min(_RETRY_BASE_DELAY_S * 2 ** (attempt - 1), _RETRY_MAX_DELAY_S)
                delay = backoff * random.uniform(0.5, 1.5)
                log.info("write contended (%s); retry %d in %.3fs", exc.orig, attempt, delay)
                await asyncio.sleep(delay)
            except (SQLAlchemyError, OSError) as exc:
                raise StorageWriteError(f"the database write failed: {first_line(exc)}") from exc
        raise AssertionError("unreachable")

    async def _write_once(
        self, engine: AsyncEngine, fn: Callable[[AsyncConnection], Awaitable[T]], keep: str = ""
    ) -> T:
        async with self._connect(engine, keep=keep) as conn:
            if self.is_sqlite:
                async with inline_transaction(conn, immediate=True):
                    return await fn(conn)
            async with conn.begin():
                return await fn(conn)

    @contextlib.asynccontextmanager
    async def _connect(
        self, engine: AsyncEngine, *, keep: str = ""
    ) -> AsyncIterator[AsyncConnection]:
        """A connection from `engine`'s pool, given back on exit; on a SQLite file, the
        connection kept in slot `keep` when it is free.

        A pool checkout and check-in cost about as much CPU as the statements of a short
        transaction, so SQLite keeps one connection for reads and one for writes checked
        out. A transaction takes the kept one out of its slot while it runs, so one that
        yields (only the first connect does) never shares it: a second reader meanwhile
        uses the pool. A connection that saw an error is closed rather than kept.

        SQLAlchemy's own `async with engine.connect()` closes in a task of its own,
        shielded from cancellation, so every transaction waited a turn of the event loop
        on its way out, and on SQLite it did so holding the writer slot: under load the
        writes queued one per loop iteration. An inline SQLite connection closes without
        suspending (`storage.sqlite_inline`), so no cancellation can land half-way and
        it closes directly; PostgreSQL's close does suspend and keeps the shield.
        """
        if not self.is_sqlite:
            async with engine.connect() as conn:
                yield conn
            return
        kept = self._kept.pop(keep, None) if self._kept is not None and keep else None
        conn = kept or await engine.connect()
        try:
            yield conn
        except BaseException:
            await conn.close()
            raise
        if self._kept is not None and keep and keep not in self._kept:
            self._kept[keep] = conn
        else:
            await conn.close()


def first_line(exc: BaseException) -> str:
    """The first line of a database error (the driver's own message when there is one)."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _write_error(exc: DBAPIError) -> StorageWriteError:
    """Turn a final write failure into a one-line message, naming its cause when we can."""
    message = first_line(exc)
    lowered = message.lower()
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate in _PG_REFUSED_WRITE_SQLSTATES or (
        isinstance(exc, OperationalError)
        and ("readonly" in lowered or "read-only" in lowered or "full" in lowered)
    ):
        return StorageWriteError(f"the database refused a write: {message}")
    if is_retryable(exc):
        return StorageWriteError(f"the database stayed locked after retries: {message}")
    return StorageWriteError(f"the database write failed: {message}")
