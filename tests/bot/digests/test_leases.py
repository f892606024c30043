"""Digest leases across processes on a real PostgreSQL: a slow summary keeps its lease
(renewed while it runs, re-checked before posting), a dead owner's lease is taken over
at once, and a digest is stored once per (session, last event)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from agents.models.scripted import ScriptedModel
from agents.sessions.session import Session
from agents.summary import SummaryService
from bot.digests.job import DigestJob
from storage.database import Database
from tests.bot.digests.test_digests import LEAD, greeting, greeting_record, seed_thread
from tests.fakes.slack_api import FakeSlackApi

LEASE = 0.6
SLOW = 2.0


class SlowSummaries:
    """The real summary service, after a wait longer than several leases (a hosted model
    retrying, say), writing `records` summaries (a call past them fails the test)."""

    def __init__(self, delay: float, records: int) -> None:
        self.inner = SummaryService(ScriptedModel([greeting_record] * records))
        self.delay = delay

    async def summarize(self, session: Session) -> Any:
        await asyncio.sleep(self.delay)
        return await self.inner.summarize(session)


def process(
    db: Database, client: AsyncWebClient, owner: str, delay: float, records: int
) -> DigestJob:
    return DigestJob(
        db=db,
        summarizer=SlowSummaries(delay, records),
        client=client,
        lead_channel=LEAD,
        idle_after=0.0,
        owner=owner,
        lease_seconds=LEASE,
        dead_after=30.0,
    )


async def test_slow_summary_keeps_its_lease_and_the_thread_gets_one_digest(
    postgres_url: str, client: AsyncWebClient, slack: FakeSlackApi
) -> None:
    first, second = await Database.open(postgres_url), await Database.open(postgres_url)
    try:
        await seed_thread(first, "100.000001", greeting(1), now=time.time() - 10)
        for db, owner in ((first, "proc-a"), (second, "proc-b")):
            await db.owners.beat(owner, now=time.time())
        slow = process(first, client, "proc-a", SLOW, records=1)
        running = asyncio.create_task(slow.run_once())
        # The peer scans again and again while the slow summary outlasts several leases.
        peer = process(second, client, "proc-b", 0.0, records=0)
        taken = []
        for _ in range(int(SLOW / 0.2)):
            await asyncio.sleep(0.2)
            await second.owners.beat("proc-b", now=time.time())
            await first.owners.beat("proc-a", now=time.time())
            taken += await peer.run_once()
        outcomes = await running
    finally:
        await first.close()
        await second.close()
    assert taken == []
    assert [o.outcome for o in outcomes] == ["posted"]
    assert len(slack.calls_to("chat.postMessage")) == 1


async def test_dead_owners_lease_is_taken_over_before_it_expires(
    postgres_url: str, client: AsyncWebClient, slack: FakeSlackApi
) -> None:
    db = await Database.open(postgres_url)
    try:
        key = await seed_thread(db, "100.000001", greeting(1), now=time.time() - 10)
        # A process claimed the thread for ten minutes, then stopped beating.
        await db.owners.beat("gone", now=time.time() - 120)
        assert await db.threads.claim(key, owner="gone", now=time.time(), lease_seconds=600)
        live = DigestJob(
            db=db,
            summarizer=SummaryService(ScriptedModel([greeting_record])),
            client=client,
            lead_channel=LEAD,
            idle_after=0.0,
            owner="live",
            dead_after=30.0,
        )
        await db.owners.beat("live", now=time.time())
        assert [o.outcome for o in await live.run_once()] == ["posted"]
        assert await live.run_once() == []
    finally:
        await db.close()
    assert len(slack.calls_to("chat.postMessage")) == 1


async def test_digest_is_stored_once_per_session_and_last_event(
    postgres_url: str, client: AsyncWebClient, slack: FakeSlackApi
) -> None:
    db = await Database.open(postgres_url)
    try:
        key = await seed_thread(db, "100.000001", greeting(1), now=time.time() - 10)
        thread = await db.threads.get(key)
        assert thread is not None
        ids = await asyncio.gather(
            *(
                db.digests.add(
                    record={"goal": "x"}, source_session_id=thread.session_id, last_seq=2
                )
                for _ in range(5)
            )
        )
        assert len(set(ids)) == 1
        # A lost lease left the stored digest unposted: the next holder posts it, once.
        live = DigestJob(
            db=db,
            summarizer=SummaryService(ScriptedModel([])),
            client=client,
            lead_channel=LEAD,
            idle_after=0.0,
            owner="live",
        )
        await db.digests.set_posted(ids[0], "999.1")
        assert [o.outcome for o in await live.run_once()] == ["already_posted"]
    finally:
        await db.close()
    assert slack.calls_to("chat.postMessage") == []
