"""`Database`: one engine and every store the bot keeps, opened and checked at start."""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from storage.delivery.deliveries import DeliveryStore
from storage.delivery.inflight import InflightStore
from storage.delivery.owners import OwnerStore
from storage.delivery.thread_locks import ThreadLocks
from storage.dm_conversations import DmConversationStore
from storage.engine import SqlGate, create_engine, display_url, first_line, normalize_url
from storage.errors import (
    DatabaseOutdatedError,
    DatabaseSchemaError,
    DatabaseUnavailableError,
)
from storage.feedback import FeedbackStore
from storage.forget import ForgetReport, affected_threads, forget_user
from storage.knowledge import KnowledgeStore
from storage.migrate import SchemaStatus, head_revision, schema_status, upgrade_engine
from storage.rates import RateStore
from storage.sessions import SqlSessionService
from storage.stats import StatsStore
from storage.summaries.digests import DigestStore
from storage.summaries.memory import MemoryStore
from storage.summaries.summary_deliveries import SummaryDeliveryStore
from storage.summaries.summary_runs import SummaryRunStore
from storage.summaries.windows import WindowStore
from storage.threads import ThreadKey, ThreadStore

log = logging.getLogger(__name__)


class Database:
    """The bot's database. Open it with `await Database.open(url)`; close it when done."""

    def __init__(self, engine: AsyncEngine, url: URL) -> None:
        self.engine = engine
        self.url = url
        self.gate = SqlGate(engine)
        self.sessions = SqlSessionService(self.gate)
        self.threads = ThreadStore(self.gate)
        self.deliveries = DeliveryStore(self.gate)
        self.inflight = InflightStore(self.gate)
        self.digests = DigestStore(self.gate)
        self.memory = MemoryStore(self.gate)
        self.summary_runs = SummaryRunStore(self.gate)
        self.summary_deliveries = SummaryDeliveryStore(self.gate)
        self.windows = WindowStore(self.gate)
        self.stats = StatsStore(self.gate, self.summary_runs, self.summary_deliveries)
        self.owners = OwnerStore(self.gate)
        self.thread_locks = ThreadLocks(self.gate)
        self.dm_conversations = DmConversationStore(self.gate)
        self.feedback = FeedbackStore(self.gate)
        self.rates = RateStore(self.gate)
        self.knowledge = KnowledgeStore(self.gate)

    @classmethod
    async def open(cls, url: str | URL, *, migrate: bool = True) -> Database:
        """Connect and check the schema.

        With `migrate`, pending migrations are applied to SQLite (an embedded file has
        one owner). PostgreSQL is shared by several processes and is only migrated by
        `support-bot db upgrade`. Raises `DatabaseUnavailableError` when the database
        cannot be reached, `DatabaseOutdatedError` when its schema is behind the code and
        was not migrated, `DatabaseSchemaError` when it is ahead of the code.
        """
        parsed = normalize_url(url)
        engine = create_engine(parsed)
        try:
            await _check_reachable(engine, parsed)
            await _prepare_schema(engine, parsed, migrate=migrate)
        except BaseException:
            await engine.dispose()
            raise
        return cls(engine, parsed)

    async def healthcheck(self) -> bool:
        """True when a trivial query succeeds."""
        try:
            async with self.engine.connect() as conn:
                await conn.execute(sa.text("SELECT 1"))
        except (SQLAlchemyError, OSError) as exc:
            log.warning("database healthcheck failed: %s", first_line(exc))
            return False
        return True

    async def forget_user(self, user_id: str) -> ForgetReport:
        """Delete everything that names `user_id`, or quotes what they said, in one
        transaction (see `storage.forget`): rows deleted per kind, and the posted
        digests that quoted them. On PostgreSQL it holds the lock of every thread it
        touches meanwhile, so no running bot writes their words again as it works
        (threads found while the first locks were taken are locked too)."""
        async with AsyncExitStack() as held:
            locked: set[tuple[str, str, str]] = set()
            while new := [
                key
                for key in await self.gate.read(lambda conn: affected_threads(conn, user_id))
                if key not in locked
            ]:
                for team, channel, ts in new:
                    thread = ThreadKey(team_id=team, channel_id=channel, thread_ts=ts)
                    await held.enter_async_context(self.thread_locks.hold(thread))
                locked.update(new)
            report = await self.gate.write(lambda conn: forget_user(conn, user_id))
        report.locked_threads = 0 if self.gate.is_sqlite else len(locked)  # no locks there
        self.sessions.decoded.clear()  # nor kept decoded in memory
        log.info("forgot user %s: %s", user_id, report.counts)
        return report

    async def close(self) -> None:
        await self.thread_locks.close()
        await self.gate.close()
        await self.engine.dispose()

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


async def _check_reachable(engine: AsyncEngine, url: URL) -> None:
    try:
        async with engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))
    except (SQLAlchemyError, OSError, TimeoutError) as exc:
        # One line, no chained traceback: this is an operator's configuration problem.
        raise DatabaseUnavailableError(
            f"cannot open database {display_url(url)}: {first_line(exc)}"
        ) from None


async def _prepare_schema(engine: AsyncEngine, url: URL, *, migrate: bool) -> None:
    async with engine.connect() as conn:
        status, current = await conn.run_sync(schema_status)
    if status is SchemaStatus.CURRENT:
        return
    head = head_revision()
    if status is SchemaStatus.UNKNOWN:
        raise DatabaseSchemaError(
            f"database {display_url(url)} is at schema revision {current}, which this code "
            f"does not know (newest is {head}); run a newer support-bot"
        )
    if migrate and engine.dialect.name == "sqlite":
        log.info("migrating %s from %s to %s", display_url(url), current or "empty", head)
        await upgrade_engine(engine)
        return
    raise DatabaseOutdatedError(
        f"database {display_url(url)} is at schema revision {current or 'none'} but this code "
        f"needs {head}; run `support-bot db upgrade`"
    )
