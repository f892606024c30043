"""Slack deliveries are accepted exactly once, even when raced."""

from __future__ import annotations

import asyncio
import random

from storage import Database


async def test_delivery_first_of_concurrent_duplicates_wins(db: Database) -> None:
    keys = [f"Ev{n:04d}" for n in range(100)] * 10
    random.Random(7).shuffle(keys)

    accepted = await asyncio.gather(*(db.deliveries.first_delivery(k, now=1.0) for k in keys))

    winners = [key for key, ok in zip(keys, accepted, strict=True) if ok]
    assert len(winners) == 100
    assert len(set(winners)) == 100


async def test_delivery_is_remembered_until_purged(db: Database) -> None:
    assert await db.deliveries.first_delivery("old", now=100.0)
    assert await db.deliveries.first_delivery("new", now=200.0)
    assert not await db.deliveries.first_delivery("old", now=150.0)

    assert await db.deliveries.purge(older_than=150.0) == 1

    assert await db.deliveries.first_delivery("old", now=300.0)
    assert not await db.deliveries.first_delivery("new", now=300.0)
