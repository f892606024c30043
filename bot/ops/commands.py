"""What the operator commands do: `db upgrade`, `digest --once`, `stats` and `forget`.

Each takes settings and an output stream and returns an exit code; `bot.cli` only
parses arguments. Results go to the output stream, logs to stderr.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from bot.config import Settings
from bot.digests.job import DigestOutcome
from bot.ops.stats import registry_rows, render_table, stats_rows

if TYPE_CHECKING:
    from storage.database import Database

T = TypeVar("T")


class OfflineSlack:
    """Stands in for the Web API when no bot token is configured: digests are stored,
    never posted, and thread links are built locally (Slack's URL shape) rather than
    asked for."""

    async def chat_getPermalink(self, *, channel: str, message_ts: str) -> dict[str, Any]:
        return {
            "permalink": f"https://slack.invalid/archives/{channel}/p{message_ts.replace('.', '')}"
        }

    async def chat_postMessage(self, **_: Any) -> dict[str, Any]:
        raise RuntimeError("no SLACK_BOT_TOKEN: digests are stored, not posted")

    async def chat_update(self, **_: Any) -> dict[str, Any]:
        raise RuntimeError("no SLACK_BOT_TOKEN: digests are stored, not posted")

    async def chat_delete(self, **_: Any) -> dict[str, Any]:
        raise RuntimeError("no SLACK_BOT_TOKEN: digests are stored, not posted")

    async def conversations_history(self, **_: Any) -> dict[str, Any]:
        raise RuntimeError("no SLACK_BOT_TOKEN: the lead channel cannot be read")

    async def conversations_replies(self, **_: Any) -> dict[str, Any]:
        raise RuntimeError("no SLACK_BOT_TOKEN: the lead channel cannot be read")


def db_upgrade(settings: Settings, out: TextIO, revision: str = "head") -> int:
    """Apply pending migrations to DATABASE_URL."""
    from storage.engine import display_url, normalize_url
    from storage.migrate import upgrade

    reached = upgrade(settings.database_url, revision)
    out.write(f"{display_url(normalize_url(settings.database_url))} is at revision {reached}\n")
    return 0


async def digest_once(settings: Settings, out: TextIO) -> int:
    """One digest pass: post to SUPPORT_LEAD_CHANNEL when Slack is configured, else store."""
    from bot.models import open_models
    from bot.slack.client import SlackClient
    from bot.wiring import build_digest_job, build_summarizer, build_tree
    from storage.database import Database

    slack = SlackClient(settings) if settings.slack_bot_token is not None else None
    if slack is None:
        settings = settings.model_copy(update={"support_lead_channel": None})
    db = await Database.open(settings.database_url)
    try:
        async with open_models(settings) as models:
            summarizer = build_summarizer(settings, db, models)
            client = slack.web if slack is not None else OfflineSlack()
            root = build_tree(settings, models)
            job = build_digest_job(settings, db, summarizer, client, root=root)
            outcomes = await _beating(db, job.owner, settings.heartbeat_seconds, job.run_once)
    finally:
        await db.close()
        if slack is not None:
            await slack.close()
    for line in digest_lines(outcomes, posting=bool(settings.support_lead_channel)):
        out.write(line + "\n")
    return 0


async def _beating(db: Database, owner: str, every: float, work: Callable[[], Awaitable[T]]) -> T:
    """Run `work` while `owner` beats: running bots treat the leases of an owner that
    does not beat as free, and would take this pass's threads from it mid-summary."""
    await db.owners.beat(owner, now=time.time())

    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            await db.owners.beat(owner, now=time.time())

    beater = asyncio.create_task(beat())
    try:
        return await work()
    finally:
        beater.cancel()
        await db.owners.stop(owner)


def digest_lines(outcomes: list[DigestOutcome], *, posting: bool) -> list[str]:
    """One line per thread digested, then the totals."""
    if not outcomes:
        return ["No idle threads to digest."]
    lines = []
    for o in outcomes:
        where = f"{o.channel_id}/{o.thread_ts}"
        detail = f"digest #{o.digest_id}" if o.digest_id is not None else "no digest"
        if o.slack_ts:
            detail += f", posted as {o.slack_ts}"
        if o.goal:
            detail += f": {o.goal}"
        if o.problems:
            detail += " (summary unavailable: " + "; ".join(o.problems) + ")"
        lines.append(f"{o.outcome:<14} {where}  {detail}")
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.outcome] = counts.get(o.outcome, 0) + 1
    totals = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
    suffix = "" if posting else " (no lead channel or Slack token: stored only)"
    lines.append(f"{len(outcomes)} threads: {totals}{suffix}")
    return lines


async def show_stats(settings: Settings, out: TextIO, *, live_url: str | None = None) -> int:
    """The persisted figures as a table; with `live_url`, a running bot's counters too."""
    from storage.database import Database

    db = await Database.open(settings.database_url)
    try:
        sections = {"Stored (all processes, all time)": stats_rows(await db.stats.collect())}
    finally:
        await db.close()
    if live_url:
        sections[f"Live counters from {live_url}"] = registry_rows(await _fetch(live_url))
    out.write(render_table(sections))
    return 0


async def _fetch(url: str) -> str:
    import aiohttp

    async with aiohttp.ClientSession() as http, http.get(url) as response:
        response.raise_for_status()
        return await response.text()


async def forget(settings: Settings, out: TextIO, user_id: str) -> int:
    """Delete everything stored about `user_id`, and the posted digests that quoted
    them; print what was done. On SQLite, refuses while a bot is running."""
    from bot.ops.running import BotRunningError, no_bot_running
    from storage.database import Database

    try:
        with no_bot_running(settings.database_url):
            db = await Database.open(settings.database_url)
            try:
                report = await db.forget_user(user_id)
            finally:
                await db.close()
    except BotRunningError as exc:
        out.write(f"Refused: {exc}\n")
        return 1
    total = sum(report.counts.values())
    out.write(f"Deleted {total} rows for user {user_id}:\n")
    width = max(len(k) for k in report.counts)
    for kind, count in report.counts.items():
        out.write(f"  {kind:<{width}}  {count}\n")
    if report.locked_threads:
        out.write(f"Held the locks of {report.locked_threads} threads while deleting\n")
    if report.redacted_handoffs:
        out.write(f"Redacted {report.redacted_handoffs} hand-off records made from their threads\n")
    deleted, failed = await _delete_posted(settings, report.posted_digests)
    if deleted or failed:
        out.write(f"Deleted {deleted} posted digest messages from Slack")
        out.write(
            f"; {len(failed)} could not be deleted: {', '.join(failed)}\n" if failed else "\n"
        )
    return 0 if not failed else 1


async def _delete_posted(settings: Settings, posted: list[str]) -> tuple[int, list[str]]:
    """chat.delete each posted digest in the lead channel: (deleted, ts not deleted)."""
    if not posted:
        return 0, []
    channel = settings.support_lead_channel
    if settings.slack_bot_token is None or channel is None:
        return 0, list(posted)
    from slack_sdk.errors import SlackApiError

    from bot.slack.client import SlackClient

    slack = SlackClient(settings)
    deleted, failed = 0, []
    try:
        for ts in posted:
            try:
                await slack.web.chat_delete(channel=channel, ts=ts)
                deleted += 1
            except SlackApiError as exc:
                if exc.response.get("error") == "message_not_found":
                    continue
                failed.append(ts)
    finally:
        await slack.close()
    return deleted, failed
