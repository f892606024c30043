"""Named limits on work: one shared slot count (replies first) and a per-user rate.

Every piece of model-bound work — a reply, a command, a shortcut, a digest — holds a slot
of one `PriorityLimit` while it runs, so `MAX_CONCURRENT_INVOCATIONS` bounds them all
together. When slots are short, waiting replies go before waiting digests: a person in
a thread is waiting for the one, nobody for the other. `LimitedHook` puts background
model work that follows a reply (compaction, window summaries) under the same limit.
`UserRate` is a token bucket per user that callers ask before they accept a message or
command (per process: several processes each keep their own buckets).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from enum import IntEnum
from typing import Any


class Priority(IntEnum):
    """Who goes first when slots are short (lower first)."""

    REPLY = 0
    COMMAND = 1
    DIGEST = 2


class PriorityLimit:
    """A semaphore whose waiters are served by `Priority`, then in arrival order.

    `gate`, when given, is awaited before a slot is asked for: work that must not start
    yet (the event loop is behind, see `bot.threads.loop_lag`) waits there.
    """

    def __init__(self, slots: int, *, gate: Callable[[], Awaitable[None]] | None = None) -> None:
        self._free = slots
        self._gate = gate
        # The heap keeps the futures of waiters that gave up until they reach its top;
        # `_queued` counts the ones still waiting, so asking costs nothing however long
        # the queue grows.
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._queued = 0
        self._order = itertools.count()

    @property
    def waiting(self) -> int:
        """Work queued for a slot."""
        return self._queued

    @asynccontextmanager
    async def slot(self, priority: Priority) -> AsyncIterator[None]:
        """Hold one slot for the duration of the block."""
        if self._gate is not None:
            await self._gate()
        await self._acquire(priority)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, priority: Priority) -> None:
        if self._free > 0 and not self._queued:
            self._free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (int(priority), next(self._order), fut))
        self._queued += 1
        try:
            await fut
        except asyncio.CancelledError:
            if fut.cancelled():
                self._queued -= 1  # gave up while queued; its entry is skipped later
            else:
                # Granted just as it was cancelled: hand the slot on rather than leak it.
                self._release()
            raise

    def _release(self) -> None:
        while self._waiters:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                self._queued -= 1
                fut.set_result(None)
                return
        self._free += 1


class LimitedHook:
    """An after-invocation hook that runs only while holding a slot of `limit` at
    `priority`: on a model with one slot, a reply never waits behind it. `due`, when
    given, says first whether the hook has anything to do, so an invocation that leaves
    it nothing neither waits for a slot nor keeps its session alive in the queue."""

    def __init__(
        self,
        hook: Callable[[Any, str], Awaitable[None]],
        limit: PriorityLimit,
        priority: Priority,
        *,
        due: Callable[[Any, str], bool] | None = None,
    ) -> None:
        self.hook = hook
        self.limit = limit
        self.priority = priority
        self.due = due

    async def __call__(self, session: Any, invocation_id: str) -> None:
        """Wait for a slot, then run the hook (unless `due` says there is nothing to do)."""
        if self.due is not None and not self.due(session, invocation_id):
            return
        async with self.limit.slot(self.priority):
            await self.hook(session, invocation_id)


class UserRate:
    """A token bucket per user: `burst` requests at once, then `per_minute` a minute."""

    def __init__(
        self,
        *,
        per_minute: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        capacity: int = 50_000,
    ) -> None:
        self._rate = per_minute / 60.0
        self._burst = float(burst)
        self._clock = clock
        self._capacity = capacity
        self._buckets: dict[str, tuple[float, float]] = {}

    def allow(self, user: str) -> bool:
        """Take one token from `user`'s bucket; False when it is empty."""
        now = self._clock()
        tokens, last = self._buckets.pop(user, (self._burst, now))
        tokens = min(self._burst, tokens + (now - last) * self._rate)
        allowed = tokens >= 1.0
        self._buckets[user] = (tokens - 1.0 if allowed else tokens, now)
        if len(self._buckets) > self._capacity:
            # The least recently seen user (dicts keep insertion order) starts afresh.
            del self._buckets[next(iter(self._buckets))]
        return allowed
