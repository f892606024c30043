"""This process's heartbeat and the periodic takeover of dead peers' work.

Every `HEARTBEAT_SECONDS` the process records that it is alive (`storage.delivery.owners`), then
sweeps: in-flight messages of owners that have not beaten for `OWNER_DEAD_AFTER_SECONDS`
are taken over and finished (`bot.slack.recovery`). Digest leases of dead owners are free
to the next digest pass (`bot.digests.job`). A process restarted by systemd or
Kubernetes within seconds thus has its predecessor's messages answered by whichever
process sweeps first, itself included, once the predecessor's last beat is old enough.
"""

from __future__ import annotations

import logging
import time

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.slack.recovery import recover
from bot.slack.services import BotServices

log = logging.getLogger(__name__)

FORGET_OWNERS_AFTER_S = 7 * 24 * 3600.0
"""Owner rows of processes gone this long are deleted (each restart is a new owner)."""


async def beat(services: BotServices) -> None:
    """Record that this process is alive now."""
    await services.db.owners.beat(services.owner, now=time.time())


async def beat_and_sweep(services: BotServices) -> None:
    """One heartbeat, then one takeover sweep; a failure is logged and the next run
    tries again."""
    try:
        await beat(services)
        await recover(services)
        await services.db.owners.purge(before=time.time() - FORGET_OWNERS_AFTER_S)
    except Exception:
        log.exception("heartbeat or sweep failed")


def add_heartbeat(scheduler: AsyncIOScheduler, services: BotServices) -> None:
    """Run `beat_and_sweep` every `heartbeat_seconds`, one at a time."""
    seconds = services.settings.heartbeat_seconds
    scheduler.add_job(
        beat_and_sweep,
        "interval",
        args=[services],
        seconds=seconds,
        id="heartbeat-and-sweep",
        max_instances=1,
        coalesce=True,
        misfire_grace_time=max(1, int(seconds)),
    )
