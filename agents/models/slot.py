"""One model slot shared by customer turns and background work: customers first.

The embedded model serves one request at a time. A window summary or a compaction is
several long calls (10-100 s on 2 cores), and a customer's turn that reaches the server
behind one waits for all of it. `ModelSlot` puts the turns first:

- a runner holds `turn()` for the whole of each invocation (`Runner(model_slot=...)`);
- background work asks the model through `YieldingModel`, whose every call waits until
  no turn runs, and is cancelled the moment a turn starts (the server drops a request
  whose client has gone) and asked again, whole, once the turns are done.

A yielded call is asked again with the same request, so the work that made it (a
window's summary, say) goes on as if it had waited: nothing is lost and nothing is
stored twice. While turns keep coming, background calls wait; they run in the gaps.
Built on `asyncio.Event` and task cancellation only.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from agents.metrics import REGISTRY
from agents.models.base import LlmRequest, LlmResponse, Model
from agents.models.profile import ModelProfile

T = TypeVar("T")

REGISTRY.describe(
    "support_bot_background_calls_yielded_total",
    "counter",
    "Background model calls (window summaries, compaction) cancelled for a customer's turn "
    "and asked again after it",
)


class ModelSlot:
    """Customer turns and background calls on one model slot; see the module docstring.

    `yielded` counts background calls cancelled for a turn (each was asked again)."""

    def __init__(self) -> None:
        self._turns = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._running: set[asyncio.Future[Any]] = set()
        self._preempted: set[asyncio.Future[Any]] = set()
        self.yielded = 0

    @property
    def turns(self) -> int:
        """Customer turns running now."""
        return self._turns

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold the slot for a customer's turn: background calls in flight are cancelled
        (to be asked again) and none starts until every turn has ended."""
        self._turns += 1
        self._idle.clear()
        for task in self._running - self._preempted:
            self._preempted.add(task)
            task.cancel()
            self.yielded += 1
            REGISTRY.inc("support_bot_background_calls_yielded_total")
        try:
            yield
        finally:
            self._turns -= 1
            if not self._turns:
                self._idle.set()

    async def background(self, call: Callable[[], Awaitable[T]]) -> T:
        """`call()` once no turn runs; cancelled by a turn that starts meanwhile and
        made again from the start when the turns are done, until it completes."""
        while True:
            while self._turns:
                await self._idle.wait()
            task: asyncio.Future[T] = asyncio.ensure_future(call())
            self._running.add(task)
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                task.cancel()  # the caller gave up: so does its call
                raise
            finally:
                self._running.discard(task)
            preempted = task in self._preempted
            self._preempted.discard(task)
            if not (preempted and task.cancelled()):
                return task.result()


class YieldingModel:
    """`model` for background work on a `ModelSlot`: each call yields to customer turns
    (see `ModelSlot.background`). Same name and profile as `model`."""

    def __init__(self, model: Model, slot: ModelSlot) -> None:
        self.model = model
        self.slot = slot
        self.name = model.name

    @property
    def profile(self) -> ModelProfile:
        """The wrapped model's profile."""
        return self.model.profile

    async def generate(self, request: LlmRequest) -> LlmResponse:
        """The wrapped model's answer, asked while no customer turn runs."""
        return await self.slot.background(lambda: self.model.generate(request))
