"""One invocation at a time per thread, across every process sharing the database.

On PostgreSQL a thread's lock is a session-level advisory lock keyed by a 64-bit hash of
`(team_id, channel_id, thread_ts)`. All of one process's locks live on one dedicated
connection and are taken with `pg_try_advisory_lock`, polled: a blocking
`pg_advisory_lock` would stall that shared connection, and one connection per waiting
invocation would exhaust PostgreSQL's connection limit with a few processes. Within a
process the thread worker already runs a thread's messages one at a time, so the lock
only ever excludes other processes. If the lock connection drops, PostgreSQL releases
its locks; the next acquisition opens a new one.

Every message takes and gives back its thread's lock, so the calls of all invocations are
batched: whatever arrives while one round trip is out goes in the next, as one statement
on an autocommit connection (no BEGIN or COMMIT). One call at a time per message on one
connection held a busy PostgreSQL bot to a few dozen messages a second (issue 18).

On SQLite one bot process per database is the supported case (the file has one writer,
and the worker orders each thread), so `hold` takes no lock there.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.threads import ThreadKey


def lock_id(key: ThreadKey) -> int:
    """The advisory-lock key of a thread: a signed 64-bit hash, stable across processes."""
    raw = f"{key.team_id}\x1f{key.channel_id}\x1f{key.thread_ts}".encode()
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big", signed=True)


_CALLS = sa.text(
    "SELECT CASE WHEN c.unlock THEN pg_advisory_unlock(c.k) ELSE pg_try_advisory_lock(c.k) END"
    " FROM unnest(CAST(:keys AS bigint[]), CAST(:unlocks AS boolean[]))"
    " WITH ORDINALITY AS c(k, unlock, n) ORDER BY c.n"
)


class _Call:
    """One lock or unlock waiting for the next batch."""

    __slots__ = ("future", "ident", "unlock")

    def __init__(self, ident: int, *, unlock: bool) -> None:
        self.ident = ident
        self.unlock = unlock
        self.future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()


class ThreadLocks:
    """Cross-process thread locks (`async with locks.hold(key): ...`)."""

    def __init__(self, gate: SqlGate, *, poll_seconds: float = 0.05) -> None:
        self._gate = gate
        self._poll = poll_seconds
        self._conn: AsyncConnection | None = None
        self._pending: list[_Call] = []
        self._flusher: asyncio.Task[None] | None = None

    @asynccontextmanager
    async def hold(self, key: ThreadKey) -> AsyncIterator[None]:
        """Hold the thread's lock for the body; waits while another process holds it."""
        if self._gate.is_sqlite:
            yield
            return
        ident = lock_id(key)
        while True:  # polled: the shared connection must never block on a lock
            if await self._call(ident, unlock=False):
                break
            await asyncio.sleep(self._poll)
        try:
            yield
        finally:
            await asyncio.shield(self._release(ident))

    async def _release(self, ident: int) -> None:
        try:
            await self._call(ident, unlock=True)
        except DBAPIError:
            pass  # the connection is gone, and PostgreSQL released its locks with it

    async def _call(self, ident: int, *, unlock: bool) -> bool:
        call = self._enqueue(ident, unlock=unlock)
        try:
            return await asyncio.shield(call.future)
        except asyncio.CancelledError:
            if not unlock:  # the lock may still be granted: give it back when it is
                call.future.add_done_callback(partial(self._give_back, ident))
            raise

    def _enqueue(self, ident: int, *, unlock: bool) -> _Call:
        call = _Call(ident, unlock=unlock)
        self._pending.append(call)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return call

    def _give_back(self, ident: int, granted: asyncio.Future[bool]) -> None:
        if granted.exception() is None and granted.result():
            # Nobody waits for this one; a failure means the connection (and lock) is gone.
            self._enqueue(ident, unlock=True).future.add_done_callback(_ignore)

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                results = await self._send(batch)
            except Exception as exc:  # every caller of the batch hears of it, none hangs
                for call in batch:
                    _settle(call, exc)
                continue
            for call, value in zip(batch, results, strict=True):
                call.future.set_result(value)

    async def _send(self, batch: list[_Call]) -> list[bool]:
        if self._conn is None:
            conn = await self._gate.engine.connect()
            self._conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        params = {"keys": [c.ident for c in batch], "unlocks": [c.unlock for c in batch]}
        try:
            return [bool(v) for v in (await self._conn.execute(_CALLS, params)).scalars()]
        except Exception:
            await self._drop()
            raise

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.invalidate()
            await conn.close()

    async def close(self) -> None:
        """Give the lock connection back (and with it any lock still held)."""
        if self._flusher is not None:
            await asyncio.gather(self._flusher, return_exceptions=True)
        await self._drop()


def _settle(call: _Call, exc: BaseException) -> None:
    if not call.future.done():
        call.future.set_exception(exc)


def _ignore(future: asyncio.Future[bool]) -> None:
    future.exception()  # retrieved, so asyncio does not log it as forgotten
