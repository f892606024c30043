"""Background jobs in the bot's own event loop (APScheduler): idle-thread digests, and
expiry of processed Slack delivery ids."""

from __future__ import annotations

import logging
import time

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.config import Settings
from bot.digests.job import DigestJob
from storage.database import Database

logger = logging.getLogger(__name__)


async def digest_pass(job: DigestJob) -> None:
    outcomes = await job.run_once()
    if outcomes:
        counts: dict[str, int] = {}
        for outcome in outcomes:
            counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
        logger.info("digest pass", extra={"digests": counts})


async def purge_deliveries(db: Database, retention_seconds: float) -> None:
    removed = await db.deliveries.purge(time.time() - retention_seconds)
    if removed:
        logger.info("expired processed deliveries", extra={"removed": removed})


def start_scheduler(settings: Settings, db: Database, job: DigestJob) -> AsyncIOScheduler:
    """Start the jobs. Digest passes run one at a time (`max_instances=1`), missed runs
    fold into one (`coalesce`), and a late run is still taken within a grace time.
    Call from the running event loop; stop with `shutdown(wait=False)`."""
    scheduler = AsyncIOScheduler()
    scheduler.add_job(
        digest_pass,
        "interval",
        args=[job],
        seconds=settings.digest_scan_seconds,
        id="idle-thread-digests",
        max_instances=1,
        coalesce=True,
        misfire_grace_time=max(30, int(settings.digest_scan_seconds)),
    )
    scheduler.add_job(
        purge_deliveries,
        "interval",
        args=[db, settings.delivery_retention_seconds],
        hours=1,
        id="purge-deliveries",
        max_instances=1,
        coalesce=True,
    )
    scheduler.start()
    return scheduler
