"""Per-thread ordering, global limit and drain of the background worker."""

from __future__ import annotations

import asyncio

from bot.threads.worker import ThreadWorker


async def test_thread_worker_orders_per_key_and_bounds_concurrency() -> None:
    worker = ThreadWorker(max_concurrent=2)
    seen: dict[str, list[int]] = {"a": [], "b": [], "c": []}
    running, peak = 0, 0

    def job(key: str, n: int):
        async def run() -> None:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.001 * (5 - n % 5))
            seen[key].append(n)
            running -= 1

        return run

    for n in range(10):
        for key in seen:
            worker.submit(key, job(key, n))
    assert await worker.drain(5)
    assert all(v == list(range(10)) for v in seen.values())
    assert peak == 2


async def test_thread_worker_drain_cancels_after_grace() -> None:
    worker = ThreadWorker(max_concurrent=1)
    cancelled = asyncio.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    worker.submit("t", forever)
    await asyncio.sleep(0)
    assert not await worker.drain(0.05)
    assert cancelled.is_set() and worker.closed
