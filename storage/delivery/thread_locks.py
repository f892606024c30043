"""One invocation at a time per thread, across every process sharing the database.

On PostgreSQL a thread's lock is a session-level advisory lock keyed by a 64-bit hash of
`(team_id, channel_id, thread_ts)`. All of one process's locks live on one dedicated
connection and are taken with `pg_try_advisory_lock`, polled: a blocking
`pg_advisory_lock` would stall that shared connection, and one connection per waiting
invocation would exhaust PostgreSQL's connection limit with a few processes. Within a
process the thread worker already runs a thread's messages one at a time, so the lock
only ever excludes other processes. If the lock connection drops, PostgreSQL releases
its locks; the next acquisition opens a new one.

On SQLite one bot process per database is the supported case (the file has one writer,
and the worker orders each thread), so `hold` takes no lock there.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.threads import ThreadKey


def lock_id(key: ThreadKey) -> int:
    """The advisory-lock key of a thread: a signed 64-bit hash, stable across processes."""
    raw = f"{key.team_id}\x1f{key.channel_id}\x1f{key.thread_ts}".encode()
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big", signed=True)


class ThreadLocks:
    """Cross-process thread locks (`async with locks.hold(key): ...`)."""

    def __init__(self, gate: SqlGate, *, poll_seconds: float = 0.05) -> None:
        self._gate = gate
        self._poll = poll_seconds
        self._conn: AsyncConnection | None = None
        self._mutex = asyncio.Lock()

    @asynccontextmanager
    async def hold(self, key: ThreadKey) -> AsyncIterator[None]:
        """Hold the thread's lock for the body; waits while another process holds it."""
        if self._gate.is_sqlite:
            yield
            return
        ident = lock_id(key)
        while True:  # polled: the shared connection must never block on a lock
            if await self._call("pg_try_advisory_lock", ident):
                break
            await asyncio.sleep(self._poll)
        try:
            yield
        finally:
            await asyncio.shield(self._release(ident))

    async def _release(self, ident: int) -> None:
        try:
            await self._call("pg_advisory_unlock", ident)
        except DBAPIError:
            pass  # the connection is gone, and PostgreSQL released its locks with it

    async def _call(self, function: str, ident: int) -> bool:
        async with self._mutex:
            if self._conn is None:
                self._conn = await self._gate.engine.connect()
            try:
                result = await self._conn.execute(sa.select(getattr(sa.func, function)(ident)))
                value = bool(result.scalar_one())
                await self._conn.commit()
                return value
            except DBAPIError:
                await self._drop()
                raise

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.invalidate()
            await conn.close()

    async def close(self) -> None:
        """Give the lock connection back (and with it any lock still held)."""
        async with self._mutex:
            await self._drop()
