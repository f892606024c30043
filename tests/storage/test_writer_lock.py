"""SQLite's writer slot: urgent writers (delivery acks) go before queued ones."""

from __future__ import annotations

import asyncio

import pytest

from storage.writer_lock import WriterLock


async def test_writer_lock_serves_urgent_waiters_first_then_in_order() -> None:
    lock = WriterLock()
    order: list[str] = []
    release = asyncio.Event()

    async def first() -> None:
        async with lock.hold():
            await release.wait()
            order.append("first")

    async def writer(name: str, *, urgent: bool = False) -> None:
        async with lock.hold(urgent=urgent):
            order.append(name)

    holder = asyncio.create_task(first())
    await asyncio.sleep(0)
    waiting = [
        asyncio.create_task(writer("normal-1")),
        asyncio.create_task(writer("normal-2")),
        asyncio.create_task(writer("ack-1", urgent=True)),
        asyncio.create_task(writer("ack-2", urgent=True)),
    ]
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(holder, *waiting)
    assert order == ["first", "ack-1", "ack-2", "normal-1", "normal-2"]


async def test_writer_lock_cancelled_waiter_does_not_block_the_slot() -> None:
    lock = WriterLock()
    release = asyncio.Event()

    async def hold() -> None:
        async with lock.hold():
            await release.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0)

    async def wait_forever() -> None:
        async with lock.hold():
            pass

    doomed = asyncio.create_task(wait_forever())
    await asyncio.sleep(0)
    doomed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await doomed
    release.set()
    await holder
    async with asyncio.timeout(1):
        async with lock.hold(urgent=True):
            pass


async def test_a_free_slot_is_taken_at_once_even_with_writers_queued() -> None:
    # Handing the slot to a queued writer would leave it idle until that writer's turn
    # on the loop; a writer that finds it free goes straight in instead.
    lock = WriterLock()
    release = asyncio.Event()
    order: list[str] = []

    async def first() -> None:
        async with lock.hold():
            await release.wait()

    async def writer(name: str) -> None:
        async with lock.hold():
            order.append(name)

    holder = asyncio.create_task(first())
    await asyncio.sleep(0)
    queued = asyncio.create_task(writer("queued"))
    await asyncio.sleep(0)
    release.set()
    await asyncio.sleep(0)  # the holder lets go; the queued writer is woken, not yet run
    assert holder.done() and not queued.done()
    async with lock.hold():
        order.append("arrived")
    await queued
    assert order == ["arrived", "queued"]
