"""A real SQLite database with the shipped sample knowledge base indexed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agents.knowledge.documents import load_folder
from bot.knowledge import SAMPLE_DIR
from storage import Database


@pytest.fixture
async def db(sqlite_url: str) -> AsyncIterator[Database]:
    database = await Database.open(sqlite_url)
    await database.knowledge.sync(load_folder(SAMPLE_DIR))
    try:
        yield database
    finally:
        await database.close()
