"""The shared slot count: its queue's length stays right as waiters give up or are let in."""

from __future__ import annotations

import asyncio

from bot.threads.admission import Priority, PriorityLimit


async def hold(limit: PriorityLimit, priority: Priority, release: asyncio.Event) -> None:
    async with limit.slot(priority):
        await release.wait()


async def test_waiting_counts_only_work_still_queued() -> None:
    limit = PriorityLimit(1)
    release = asyncio.Event()
    holder = asyncio.create_task(hold(limit, Priority.REPLY, release))
    await asyncio.sleep(0)
    queued = [asyncio.create_task(hold(limit, Priority.DIGEST, release)) for _ in range(3)]
    await asyncio.sleep(0)
    assert limit.waiting == 3
    # One gives up while queued: it no longer counts, and is skipped when a slot frees.
    queued[0].cancel()
    await asyncio.sleep(0)
    assert limit.waiting == 2
    release.set()
    await asyncio.wait_for(asyncio.gather(holder, *queued[1:]), 10)
    assert limit.waiting == 0
    # Every slot came back: the next one starts at once.
    await asyncio.wait_for(hold(limit, Priority.REPLY, release), 10)


async def test_a_waiter_granted_as_it_is_cancelled_hands_its_slot_on() -> None:
    limit = PriorityLimit(1)
    release = asyncio.Event()
    holder = asyncio.create_task(hold(limit, Priority.REPLY, release))
    await asyncio.sleep(0)
    first = asyncio.create_task(hold(limit, Priority.REPLY, asyncio.Event()))
    second = asyncio.create_task(hold(limit, Priority.REPLY, release))
    await asyncio.sleep(0)
    release.set()
    await holder  # its slot goes to `first`, which is cancelled before it runs
    first.cancel()
    await asyncio.wait_for(second, 10)
    assert first.cancelled() and limit.waiting == 0
