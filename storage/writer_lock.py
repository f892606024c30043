"""SQLite's one-writer slot for this process's writes (`storage.engine.SqlGate`)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator


class WriterLock:
    """SQLite's one-writer slot, with two queues: urgent writers go first.

    A free slot is taken at once, even while writers are queued. Our transactions run to
    the end without yielding to the event loop (`storage.sqlite_inline`,
    `SqlGate._connect`), so the slot is free whenever a coroutine gets to ask for it.
    Handing it to the next queued writer instead would leave it idle until that writer's
    turn on the loop, and every writer arriving meanwhile would queue too: one write per
    loop iteration, a convoy that held the bot to about 20 messages a second with its CPU
    half idle (issue 18). The queues matter when a transaction does yield (the first
    connection opens on a thread): then the write that acknowledges a Slack delivery goes
    ahead of invocation writes (Slack wants its ack within 3 s), and within each queue
    the order is first come, first served.
    """

    def __init__(self) -> None:
        self._held = False
        self._urgent: collections.deque[asyncio.Future[None]] = collections.deque()
        self._normal: collections.deque[asyncio.Future[None]] = collections.deque()

    @contextlib.asynccontextmanager
    async def hold(self, *, urgent: bool = False) -> AsyncIterator[None]:
        queue = self._urgent if urgent else self._normal
        woken = False
        while self._held:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            # Woken but beaten to the slot by a yielding writer: keep the place in line.
            if woken:
                queue.appendleft(waiter)
            else:
                queue.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # woken just as it was cancelled: pass the wake-up on
                else:
                    # `_wake` may have dropped the cancelled waiter already.
                    with contextlib.suppress(ValueError):
                        queue.remove(waiter)
                raise
            woken = True
        self._held = True
        try:
            yield
        finally:
            self._held = False
            self._wake()

    def _wake(self) -> None:
        for queue in (self._urgent, self._normal):
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    return
