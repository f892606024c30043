"""Event-loop lag, and a gate that holds back new work while the loop is behind.

Acks and invocations share one event loop. When the process needs more CPU than it
gets, every callback waits behind every other, and an ack (a handful of loop turns)
slides past Slack's 3 s retry window. `LoopLagGate` samples how late a periodic timer
fires; while that lag stays above a threshold, new work (`admit`) waits in line instead
of starting, so the loop's turns go to acks, and to the invocations already running.
Work that waits here was accepted already: its message is durable in `db.inflight`.

Only lag that persists holds work: `HOLD_AFTER_LATE_SAMPLES` late samples in a row. One
late sample is a single long pause (a garbage collection, a burst of arrivals), already
over when it is seen; holding starts then would only add the trickle's delay to every
reply that arrived during it.

Progress is guaranteed: a lagging sample still admits the oldest waiter, and a clear
one admits twice as many as the clear sample before it (1, 2, 4, ...), so a backlog
enters gradually instead of all at once and bringing the lag straight back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

from agents.metrics import REGISTRY

REGISTRY.describe(
    "support_bot_event_loop_lag_seconds", "gauge", "How late the event loop ran a 50 ms timer"
)
REGISTRY.describe(
    "support_bot_held_starts_total", "counter", "Work that waited for the event loop to catch up"
)

_IDLE_SAMPLES = 40
HOLD_AFTER_LATE_SAMPLES = 2


class LoopLagGate:
    """Admits new work at once while the event loop keeps time, in a trickle while not.

    The sampler runs only while the gate is in use: it starts with the first `admit` and
    stops after `_IDLE_SAMPLES` samples with nobody admitted or waiting (or on `close`),
    letting every waiter through as it stops.
    """

    def __init__(self, *, threshold: float, interval: float = 0.05) -> None:
        self.threshold = threshold
        self.interval = interval
        self.lag = 0.0
        self._held = False
        self._late = 0
        self._budget = 1
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._sampler: asyncio.Task[None] | None = None
        self._used = False

    @property
    def held(self) -> bool:
        """True while the last `HOLD_AFTER_LATE_SAMPLES` samples were over the threshold."""
        return self._held

    @property
    def waiting(self) -> int:
        """Work waiting to start."""
        return sum(1 for fut in self._waiters if not fut.done())

    async def admit(self) -> None:
        """Return once new work may start (at once unless the loop is behind)."""
        self._used = True
        if self._sampler is None or self._sampler.done():
            self._sampler = asyncio.get_running_loop().create_task(self._sample())
        if not self._held and not self._waiters:
            return
        REGISTRY.inc("support_bot_held_starts_total")
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        await fut

    async def close(self) -> None:
        """Stop sampling; whoever waits is let through."""
        if self._sampler is not None:
            self._sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampler
            self._sampler = None

    async def _sample(self) -> None:
        loop = asyncio.get_running_loop()
        idle = 0
        try:
            while idle < _IDLE_SAMPLES:
                due = loop.time() + self.interval
                await asyncio.sleep(self.interval)
                self.lag = max(0.0, loop.time() - due)
                REGISTRY.set("support_bot_event_loop_lag_seconds", self.lag)
                self._late = self._late + 1 if self.lag > self.threshold else 0
                self._held = self._late >= HOLD_AFTER_LATE_SAMPLES
                if self._held:
                    self._budget = 1
                    self._let_in(1)
                else:
                    self._let_in(self._budget)
                    self._budget = min(self._budget * 2, 1 << 16)
                idle = 0 if self._used or self._waiters else idle + 1
                self._used = False
        finally:
            self._held = False
            self._late = 0
            self._let_in(len(self._waiters))

    def _let_in(self, count: int) -> None:
        while count > 0 and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                count -= 1
