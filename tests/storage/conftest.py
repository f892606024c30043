"""Storage fixtures: a Database on a real SQLite file or a real PostgreSQL database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage import Database


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    """A database URL at the schema head, on each SQL backend in turn."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    database = await Database.open(db_url)
    try:
        yield database
    finally:
        await database.close()
