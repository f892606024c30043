"""Storage fixtures: a Database on a real SQLite file or a real PostgreSQL database
(`db_url`, from `tests.fixtures.backends`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from storage import Database


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    database = await Database.open(db_url)
    try:
        yield database
    finally:
        await database.close()
