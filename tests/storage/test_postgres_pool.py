"""PostgreSQL connections: checked before use only after sitting idle, replaced when dead."""

from __future__ import annotations

import asyncpg
import pytest

import storage.engine
from storage import Database
from storage.threads import ThreadKey

KEY = ThreadKey(team_id="T1", channel_id="C1", thread_ts="1.0")


async def test_a_dead_idle_connection_is_replaced_before_use(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = await Database.open(postgres_url)
    try:
        await db.threads.create(KEY, session_id="s1", app_name="app", user_id="u1", now=1.0)
        assert await db.threads.get(KEY) is not None  # pooled connections now exist
        # Every pooled connection dies (a server restart, say) and has been idle a while.
        admin = await asyncpg.connect(postgres_url.replace("postgresql+asyncpg", "postgresql"))
        try:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        finally:
            await admin.close()
        monkeypatch.setattr(storage.engine, "_IDLE_BEFORE_PING_S", 0.0)
        assert await db.threads.get(KEY) is not None
        assert await db.threads.touch(KEY, now=2.0)
    finally:
        await db.close()
