"""Named limits on work: one shared slot count (replies first) and a per-user rate.

Every piece of model-bound work — a reply, a command, a shortcut, a digest — holds a slot
of one `PriorityLimit` while it runs, so `MAX_CONCURRENT_INVOCATIONS` bounds them all
together. When slots are short, waiting replies go before waiting digests: a person in
a thread is waiting for the one, nobody for the other. `LimitedHook` puts background
model work that follows a reply (compaction, window summaries) under the same limit.
`UserRate` is a window per user, counted in the database when processes share one (so
it holds across them), that callers ask before they accept, that is write, a message,
command or click.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from enum import Enum, IntEnum
from typing import Any, Protocol

from storage.rates import RateTaken


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


class RateVerdict(Enum):
    """What `UserRate.check` decided: let the request through, or refuse it and tell the
    user (once a window), or refuse it quietly (they were told already)."""

    ALLOW = "allow"
    TELL = "tell"
    QUIET = "quiet"


class RateCounter(Protocol):
    """Where requests are counted (`storage.rates.RateStore`)."""

    async def take(self, user_id: str, *, now: float, window: float, limit: int) -> RateTaken:
        """Count one request of `user_id`; see `RateStore.take`."""
        ...


class LocalRates:
    """`RateStore`'s counting in this process alone, for a database with one owner
    (SQLite): the same windows, without a write per request."""

    def __init__(self, *, capacity: int = 50_000) -> None:
        self._capacity = capacity
        # user -> [window start, requests counted, told]
        self._windows: dict[str, list[Any]] = {}

    async def take(self, user_id: str, *, now: float, window: float, limit: int) -> RateTaken:
        """Count one request of `user_id`; see `storage.rates.RateStore.take`."""
        entry = self._windows.pop(user_id, None)
        if entry is None or entry[0] <= now - window:
            entry = [now, 0, False]
        entry[1] += 1
        tell = entry[1] > limit and not entry[2]
        entry[2] = entry[2] or tell
        self._windows[user_id] = entry
        if len(self._windows) > self._capacity:
            # The least recently seen user (dicts keep insertion order) starts afresh.
            del self._windows[next(iter(self._windows))]
        return RateTaken(count=entry[1], window_end=entry[0] + window, tell=tell)


class UserRate:
    """A per-user rate: `burst` requests in a window of `burst / per_minute` minutes (the
    same average as `per_minute`), counted by `counter`: the database when several
    processes share it (PostgreSQL), so the limit holds across them; `LocalRates` when
    the database has one owner (SQLite). A user over the limit is told once per window;
    until the window ends this process refuses them without asking the counter again (its
    fast path)."""

    def __init__(
        self,
        counter: RateCounter,
        *,
        per_minute: float,
        burst: int,
        clock: Callable[[], float] = time.time,
        capacity: int = 50_000,
    ) -> None:
        self._counter = counter
        self._limit = burst
        self._window = burst / per_minute * 60.0
        self._clock = clock
        self._capacity = capacity
        # Users known to be over the limit and told, with the end of their window.
        self._refused_until: dict[str, float] = {}

    async def check(self, user: str) -> RateVerdict:
        """Count one request of `user` (before anything of it is written) and decide."""
        now = self._clock()
        until = self._refused_until.pop(user, None)
        if until is not None and now < until:
            self._refused_until[user] = until
            return RateVerdict.QUIET
        taken = await self._counter.take(user, now=now, window=self._window, limit=self._limit)
        if taken.count <= self._limit:
            return RateVerdict.ALLOW
        self._refused_until[user] = taken.window_end
        if len(self._refused_until) > self._capacity:
            # The oldest entry goes; that user's next request asks the database again.
            del self._refused_until[next(iter(self._refused_until))]
        return RateVerdict.TELL if taken.tell else RateVerdict.QUIET
