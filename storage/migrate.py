"""Schema migrations: apply them (`support-bot db upgrade`) and check the revision at start."""

from __future__ import annotations

import asyncio
from enum import Enum
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from storage.engine import create_engine

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Several processes may start at once against one PostgreSQL: one migrates, the rest wait.
_PG_MIGRATION_LOCK_ID = 0x5B07_DB01


class SchemaStatus(Enum):
    """Where a database stands against this code's migrations."""

    CURRENT = "current"
    EMPTY = "empty"
    OUTDATED = "outdated"
    UNKNOWN = "unknown"


def alembic_config(connection: sa.Connection | None = None) -> Config:
    """An Alembic config for the packaged migrations, bound to `connection` if given."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision this code knows."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(connection: sa.Connection) -> str | None:
    """The revision stamped in the database, or None when it has no schema yet."""
    return MigrationContext.configure(connection).get_current_revision()


def schema_status(connection: sa.Connection) -> tuple[SchemaStatus, str | None]:
    """Compare the database's revision with the code's head."""
    current = current_revision(connection)
    if current is None:
        return SchemaStatus.EMPTY, None
    script = ScriptDirectory.from_config(alembic_config())
    if current == script.get_current_head():
        return SchemaStatus.CURRENT, current
    known = {rev.revision for rev in script.walk_revisions()}
    return (SchemaStatus.OUTDATED if current in known else SchemaStatus.UNKNOWN), current


def _upgrade_on(connection: sa.Connection, revision: str) -> None:
    if connection.dialect.name == "postgresql":
        connection.execute(sa.text(f"SELECT pg_advisory_xact_lock({_PG_MIGRATION_LOCK_ID})"))
    command.upgrade(alembic_config(connection), revision)


async def upgrade_engine(engine: AsyncEngine, revision: str = "head") -> str | None:
    """Apply migrations up to `revision` through `engine`; returns the new revision."""
    async with engine.begin() as conn:
        await conn.run_sync(_upgrade_on, revision)
    async with engine.connect() as conn:
        return await conn.run_sync(current_revision)


async def upgrade_async(url: str | URL, revision: str = "head") -> str | None:
    """Apply migrations to the database at `url`; returns the new revision."""
    engine = create_engine(url)
    try:
        return await upgrade_engine(engine, revision)
    finally:
        await engine.dispose()


def upgrade(url: str | URL, revision: str = "head") -> str | None:
    """Synchronous `upgrade_async`, for the `support-bot db upgrade` command."""
    return asyncio.run(upgrade_async(url, revision))
