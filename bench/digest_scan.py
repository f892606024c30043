"""Digest job benchmark: scan time, digests per minute, database time per claim.

Seeds 100,000 threads (2,000 idle, with real events) and runs `DigestJob` passes with a
scripted summariser that takes 1 s per summary, posting to the fake Slack Web API over
real HTTP, at a concurrency of 8. Prints, for SQLite and PostgreSQL: the scan
(`find_idle`) time, digests per minute, and the median database time of a claim.

    .venv/bin/python bench/digest_scan.py [--digests 240] [--latency 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from slack_sdk.web.async_client import AsyncWebClient

from agents.events import Usage
from agents.summary import Summary
from agents.summary.record import HandoffRecord, Item
from bench.storage import IDLE_AFTER, NOW, postgres_database, postgres_server, seed_threads
from bot.digests.job import DigestJob
from storage import Database
from tests.fakes.slack_api import FakeSlackApi

IDLE_THREADS = 2_000


class SlowSummarizer:
    """A validated record after `latency` seconds, like a hosted summary model."""

    def __init__(self, latency: float) -> None:
        self.latency = latency

    async def summarize(self, session: Any) -> Summary:
        await asyncio.sleep(self.latency)
        first = session.events[0]
        record = HandoffRecord(
            goal="Follow up on the customer's message",
            facts=[Item(text=first.text[:80], sources=[first.id])],
        )
        return Summary(
            session_id=session.id,
            record=record,
            attempts=1,
            usage=Usage(prompt_tokens=900, completion_tokens=120, cost=0.0004),
            problems_first_attempt=[],
            latency_s=self.latency,
        )


class TimedThreads:
    """Wraps the thread store to time each claim's database round trip."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.claims: list[float] = []

    async def claim(self, *args: Any, **kwargs: Any) -> bool:
        start = time.perf_counter()
        try:
            return bool(await self.inner.claim(*args, **kwargs))
        finally:
            self.claims.append(time.perf_counter() - start)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def bench(label: str, url: str, digests: int, latency: float) -> None:
    db = await Database.open(url)
    try:
        await seed_threads(db, idle=IDLE_THREADS, with_events=True)
        scans = []
        for _ in range(7):
            start = time.perf_counter()
            found = await db.threads.find_idle(now=NOW, idle_after=IDLE_AFTER, limit=IDLE_THREADS)
            scans.append(time.perf_counter() - start)
        assert len(found) == IDLE_THREADS
        timed = TimedThreads(db.threads)
        db.threads = timed  # type: ignore[assignment]
        async with FakeSlackApi() as slack:
            client = AsyncWebClient(token="xoxb-bench", base_url=slack.url)
            job = DigestJob(
                db=db,
                summarizer=SlowSummarizer(latency),
                client=client,
                lead_channel="CLEAD",
                idle_after=IDLE_AFTER,
                concurrency=8,
                batch=digests,
                clock=lambda: NOW,
                owner="bench",
            )
            start = time.perf_counter()
            outcomes = await job.run_once()
            elapsed = time.perf_counter() - start
            posted = len(slack.calls_to("chat.postMessage"))
    finally:
        await db.close()
    assert len(outcomes) == digests == posted, (len(outcomes), posted)
    print(f"{label}:")
    print(f"  scan (find_idle: all {IDLE_THREADS:,} idle among 100,000 threads)"
          f"  median {statistics.median(scans) * 1000:.1f} ms")  # fmt: skip
    print(f"  digests per minute at concurrency 8 ({latency:g} s summariser)"
          f"  {digests / elapsed * 60:.0f}  (ideal {8 / latency * 60:.0f})")  # fmt: skip
    print(f"  database time per claim  median {statistics.median(timed.claims) * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--digests", type=int, default=240, help="digests in the timed pass")
    parser.add_argument("--latency", type=float, default=1.0)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    with tempfile.TemporaryDirectory(prefix="bench-digest") as tmp:
        sqlite = f"sqlite+aiosqlite:///{tmp}/digest.db"
        asyncio.run(bench("SQLite", sqlite, args.digests, args.latency))
        with postgres_server(tmp) as admin_url:
            url = asyncio.run(postgres_database(admin_url))
            asyncio.run(bench("PostgreSQL", url, args.digests, args.latency))


if __name__ == "__main__":
    main()
