"""Background work: per-thread ordered queues under one shared concurrency limit."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from typing import Any

from bot.threads.admission import Priority, PriorityLimit
from bot.threads.loop_lag import LoopLagGate

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[None]]


class WorkerClosedError(RuntimeError):
    """Work was submitted after shutdown began."""


class ThreadWorker:
    """Runs jobs in background tasks that it keeps references to.

    Jobs with the same key (a Slack thread) run one at a time in submission order, at
    most `max_queue` of them waiting or running per key; different keys run
    concurrently. Thread jobs and `run` work (commands, shortcuts, digests) share one
    `PriorityLimit` of `max_concurrent` slots (or `limit`, shared with other background
    work such as window summaries), thread replies first.
    With a `gate`, no job or `run` work starts while the event loop is behind (acks
    first); it waits for the gate, then for a slot. A given `limit` is built with the
    same gate (`bot.wiring.work_limit`); the worker closes the gate on drain.
    `drain()` stops intake, lets in-flight work finish within a timeout, then cancels
    what is left (each job handles its own cancellation, e.g. by telling the user).
    """

    def __init__(
        self,
        *,
        max_concurrent: int,
        max_queue: int | None = None,
        gate: LoopLagGate | None = None,
        limit: PriorityLimit | None = None,
    ) -> None:
        self.gate = gate
        if limit is None:
            limit = PriorityLimit(max_concurrent, gate=None if gate is None else gate.admit)
        self.limit = limit
        self._max_queue = max_queue
        self._queues: dict[Hashable, deque[Job]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pending(self) -> int:
        """Jobs queued or running, plus loose tasks."""
        return sum(len(q) for q in self._queues.values()) + len(self._tasks)

    def has_work(self, key: Hashable) -> bool:
        """True while jobs for `key` are queued or running."""
        return key in self._queues

    def has_room(self, key: Hashable) -> bool:
        """True while `key`'s queue is below `max_queue`."""
        queue = self._queues.get(key)
        return self._max_queue is None or queue is None or len(queue) < self._max_queue

    def submit(self, key: Hashable, job: Job) -> None:
        """Queue `job` behind earlier jobs for `key`. Never blocks; callers that must
        respect `max_queue` ask `has_room` first (recovery does not: its work was
        already accepted)."""
        if self._closed:
            raise WorkerClosedError("shutting down")
        queue = self._queues.get(key)
        if queue is not None:
            queue.append(job)
            return
        self._queues[key] = deque([job])
        self.spawn(self._drain_key(key))

    def run(self, coro: Coroutine[Any, Any, Any], priority: Priority) -> asyncio.Task[Any]:
        """Run `coro` in a tracked task once it holds a slot of the shared limit."""

        async def limited() -> Any:
            async with self.limit.slot(priority):
                return await coro

        try:
            return self.spawn(limited())
        except WorkerClosedError:
            coro.close()
            raise

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run `coro` in a tracked task (kept alive until done, awaited on drain)."""
        if self._closed:
            coro.close()
            raise WorkerClosedError("shutting down")
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    async def _drain_key(self, key: Hashable) -> None:
        queue = self._queues[key]
        try:
            while queue:
                job = queue[0]
                async with self.limit.slot(Priority.REPLY):
                    try:
                        await job()
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        log.exception("job failed", extra={"slack_thread": str(key)})
                queue.popleft()
        finally:
            self._queues.pop(key, None)

    async def drain(self, grace_seconds: float) -> bool:
        """Stop intake and wait up to `grace_seconds`; True when everything finished."""
        self._closed = True
        if not self._tasks:
            await self._close_gate()
            return True
        _, still_running = await asyncio.wait(set(self._tasks), timeout=grace_seconds)
        for task in still_running:
            task.cancel()
        if still_running:
            await asyncio.wait(still_running, timeout=max(1.0, grace_seconds / 4))
            log.warning(
                "cancelled unfinished work on shutdown", extra={"tasks": len(still_running)}
            )
        await self._close_gate()
        return not still_running

    async def _close_gate(self) -> None:
        if self.gate is not None:
            await self.gate.close()
