"""The loop-lag gate: new work starts at once on a punctual loop, in a trickle on a
late one, and everything waiting starts once the loop catches up or the gate closes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agents.metrics import REGISTRY
from bot.threads.loop_lag import LoopLagGate
from bot.threads.worker import ThreadWorker


@asynccontextmanager
async def busy_loop(turn_seconds: float) -> AsyncIterator[None]:
    """A CPU-bound neighbour on the loop: `turn_seconds` of work in every loop turn."""
    stop = asyncio.Event()

    async def hog() -> None:
        while not stop.is_set():
            time.sleep(turn_seconds)  # noqa: ASYNC251 - the point: CPU the loop cannot use
            await asyncio.sleep(0)

    task = asyncio.create_task(hog())
    try:
        yield
    finally:
        stop.set()
        await task


async def wait_for(predicate, within: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    """Poll until `predicate` holds; `within` only guards against a hang."""
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def admits_at_once(gate: LoopLagGate, times: int = 1) -> bool:
    """Whether `times` admits all returned without waiting: no loop turn passed (a
    callback scheduled before them has not run) and no start was counted as held."""
    turned: list[bool] = []
    held_before = REGISTRY.get("support_bot_held_starts_total")
    asyncio.get_running_loop().call_soon(turned.append, True)
    for _ in range(times):
        await gate.admit()
    return not turned and REGISTRY.get("support_bot_held_starts_total") == held_before


async def test_loop_lag_gate_admits_at_once_on_a_punctual_loop() -> None:
    gate = LoopLagGate(threshold=0.05, interval=0.01)
    assert await admits_at_once(gate, 100)
    assert not gate.held
    await gate.close()


async def test_loop_lag_gate_trickles_while_late_then_lets_the_backlog_in() -> None:
    gate = LoopLagGate(threshold=0.02, interval=0.01)
    await gate.admit()
    admitted: list[int] = []

    async def start(n: int) -> None:
        await gate.admit()
        admitted.append(n)

    async with busy_loop(0.04):
        await wait_for(lambda: gate.held)
        tasks = [asyncio.create_task(start(n)) for n in range(30)]
        for _ in range(5):
            await asyncio.sleep(0)
        # Late samples still let the oldest in, one per sample, in arrival order (one let
        # in may take a loop turn more to run: on uvloop, callbacks order differently).
        await wait_for(lambda: len(admitted) > 0 and gate.waiting == 30 - len(admitted))
        assert 0 < len(admitted) < 30
        assert admitted == sorted(admitted)
    await asyncio.wait_for(asyncio.gather(*tasks), 30)
    assert admitted == list(range(30))
    assert not gate.held
    await gate.close()


async def test_loop_lag_gate_lets_work_start_through_one_long_pause() -> None:
    """One pause (a garbage collection, say) makes one late sample: work is not held."""
    gate = LoopLagGate(threshold=0.05, interval=0.01)
    await gate.admit()
    await asyncio.sleep(0.03)
    time.sleep(0.2)  # noqa: ASYNC251 - the one pause
    await wait_for(lambda: gate.lag > 0.1)
    assert not gate.held
    assert await admits_at_once(gate)
    await gate.close()


async def test_loop_lag_gate_close_lets_waiters_through() -> None:
    gate = LoopLagGate(threshold=0.02, interval=0.01)
    await gate.admit()
    async with busy_loop(0.04):
        await wait_for(lambda: gate.held)
        waiters = [asyncio.create_task(gate.admit()) for _ in range(5)]
        await asyncio.sleep(0)
        await gate.close()
        await asyncio.wait_for(asyncio.gather(*waiters), 30)


async def test_loop_lag_gate_stops_sampling_when_idle() -> None:
    gate = LoopLagGate(threshold=0.05, interval=0.001)
    await gate.admit()
    sampler = gate._sampler
    assert sampler is not None
    await asyncio.wait_for(sampler, 30)
    # The next start brings it back.
    await gate.admit()
    assert gate._sampler is not sampler and not gate._sampler.done()
    await gate.close()


async def test_thread_worker_with_a_gate_holds_jobs_not_submission() -> None:
    gate = LoopLagGate(threshold=0.02, interval=0.01)
    worker = ThreadWorker(max_concurrent=10, gate=gate)
    ran: list[str] = []

    async def job(key: str) -> None:
        ran.append(key)

    worker.submit("warm", lambda: job("warm"))
    await wait_for(lambda: ran == ["warm"])
    async with busy_loop(0.04):
        await wait_for(lambda: gate.held)
        for key in "abcdef":
            worker.submit(key, lambda key=key: job(key))
        await asyncio.sleep(0)
        assert worker.pending >= 6 - (len(ran) - 1)
        assert len(ran) < 7
    assert await worker.drain(30)
    assert sorted(ran) == sorted(["warm", *"abcdef"])
