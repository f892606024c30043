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


async def test_delivery_accepts_are_group_committed_and_exactly_once(db: Database) -> None:
    from storage.delivery.inflight import InflightKey

    # 1,000 racing accepts of 100 messages (10 deliveries each), on two engines, as two
    # processes would: each message is accepted exactly once and stored once.
    other = await Database.open(db.url)
    try:
        messages = [f"{1700000000 + n}.000100" for n in range(100)] * 10
        random.Random(3).shuffle(messages)
        accepts = [
            (db if n % 2 else other).inflight.accept(
                InflightKey(team_id="T1", channel_id="C1", message_ts=ts),
                thread_ts=ts,
                message={"user": "U1", "text": f"hello {ts}"},
                delivery_key=f"message:T1:C1:{ts}",
                owner=f"proc-{n % 2}",
                now=1.0,
            )
            for n, ts in enumerate(messages)
        ]
        accepted = await asyncio.gather(*accepts)
    finally:
        await other.close()
    winners = [ts for ts, ok in zip(messages, accepted, strict=True) if ok]
    assert sorted(winners) == sorted(set(messages))
    left = await db.inflight.left_by_others("nobody", now=2.0, dead_after=None)
    assert sorted(r.message_ts for r in left) == sorted(set(messages))
