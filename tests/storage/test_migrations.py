"""Alembic migrations: empty to head, first revision to head, and the start-up checks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from agents.events import Event
from agents.knowledge.documents import load_folder
from storage import Database, DatabaseOutdatedError, DatabaseSchemaError
from storage.engine import create_engine
from storage.migrate import alembic_config, head_revision, upgrade, upgrade_async
from storage.schema import include_name, metadata


async def _inspect(url: str) -> tuple[str | None, set[str | None], list[object]]:
    """(revision, index names on threads, schema differences from the code's metadata)."""
    engine = create_engine(url)

    def run(conn: sa.Connection) -> tuple[str | None, set[str | None], list[object]]:
        context = MigrationContext.configure(conn, opts={"include_name": include_name})
        indexes = {ix["name"] for ix in sa.inspect(conn).get_indexes("threads")}
        return context.get_current_revision(), indexes, compare_metadata(context, metadata)

    try:
        async with engine.connect() as conn:
            return await conn.run_sync(run)
    finally:
        await engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def empty_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    if request.param == "sqlite":
        return sqlite_url
    return str(request.getfixturevalue("postgres_empty_url"))


async def test_migration_empty_to_head_matches_the_code(empty_url: str) -> None:
    assert await upgrade_async(empty_url) == head_revision()
    revision, indexes, differences = await _inspect(empty_url)
    assert revision == head_revision()
    assert "ix_threads_idle" in indexes
    assert differences == []


async def test_migration_from_first_revision_keeps_data(empty_url: str) -> None:
    assert await upgrade_async(empty_url, "0001") == "0001"
    engine = create_engine(empty_url)
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "INSERT INTO threads (team_id, channel_id, thread_ts, session_id, app_name,"
                " user_id, last_activity_at, created_at)"
                " VALUES ('T1', 'C1', '1.0', 's1', 'app', 'u1', 10.0, 5.0)"
            )
        )
    await engine.dispose()
    _, indexes, _ = await _inspect(empty_url)
    assert "ix_threads_last_activity_at" in indexes

    assert await upgrade_async(empty_url) == head_revision()

    revision, indexes, differences = await _inspect(empty_url)
    assert (revision, differences) == (head_revision(), [])
    assert "ix_threads_idle" in indexes and "ix_threads_last_activity_at" not in indexes
    db = await Database.open(empty_url, migrate=False)
    try:
        threads = await db.threads.list_threads()
    finally:
        await db.close()
    assert [(t.thread_ts, t.digest_state, t.status) for t in threads] == [
        ("1.0", "pending", "active")
    ]


async def test_migration_moves_event_slack_ts_into_custom_metadata(empty_url: str) -> None:
    # Rows written before revision 0004 have a `slack_ts` column and JSON field.
    assert await upgrade_async(empty_url, "0003") == "0003"
    engine = create_engine(empty_url)
    old = '{"id":"e%d","invocation_id":"i1","author":"user","timestamp":1.0,"parts":[%s],'
    old += '"slack_ts":%s}'
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "INSERT INTO sessions (app_name, user_id, session_id, state, last_seq,"
                " created_at, updated_at) VALUES ('app', 'u1', 's1', '{}', 3, 1.0, 1.0)"
            )
        )
        for seq, ts in ((1, "1700000000.000100"), (2, None)):
            data = old % (seq, '{"text":"hi"}', f'"{ts}"' if ts else "null")
            await conn.execute(
                sa.text(
                    "INSERT INTO events (session_pk, seq, event_id, invocation_id, author,"
                    " timestamp, slack_ts, data) VALUES (1, :seq, :eid, 'i1', 'user', 1.0,"
                    " :ts, :data)"
                ),
                {"seq": seq, "eid": f"e{seq}", "ts": ts, "data": data},
            )
        await conn.execute(
            sa.text(
                "INSERT INTO events (session_pk, seq, event_id, invocation_id, author,"
                " timestamp, slack_ts, data) VALUES (1, 3, 'e3', 'i1', 'user', 1.0, NULL,"
                " 'not json')"
            )
        )
    await engine.dispose()

    assert await upgrade_async(empty_url) == head_revision()
    db = await Database.open(empty_url, migrate=False)
    try:
        session = await db.sessions.get_session(app_name="app", user_id="u1", session_id="s1")
        async with db.engine.connect() as conn:
            columns = (
                await conn.execute(sa.text("SELECT custom_metadata FROM events ORDER BY seq"))
            ).all()
    finally:
        await db.close()
    assert session is not None
    assert [(e.id, dict(e.custom_metadata)) for e in session.events] == [
        ("e1", {"slack_ts": "1700000000.000100"}),
        ("e2", {}),
    ]  # the corrupt row is still skipped on load, as before
    stored = [c if isinstance(c, dict) or c is None else json.loads(c) for (c,) in columns]
    assert stored == [{"slack_ts": "1700000000.000100"}, None, None]


async def test_migration_sqlite_is_upgraded_on_open(sqlite_url: str) -> None:
    await upgrade_async(sqlite_url, "0001")
    db = await Database.open(sqlite_url)
    await db.close()
    revision, _, _ = await _inspect(sqlite_url)
    assert revision == head_revision()


async def test_migration_outdated_database_is_refused_with_one_line(empty_url: str) -> None:
    await upgrade_async(empty_url, "0001")
    with pytest.raises(DatabaseOutdatedError) as caught:
        await Database.open(empty_url, migrate=False)
    message = str(caught.value)
    assert "\n" not in message
    assert "0001" in message and head_revision() in message and "db upgrade" in message


async def test_migration_postgres_is_never_migrated_on_open(postgres_empty_url: str) -> None:
    with pytest.raises(DatabaseOutdatedError, match="revision none"):
        await Database.open(postgres_empty_url, migrate=True)


async def test_migration_unknown_revision_is_refused(sqlite_url: str) -> None:
    await upgrade_async(sqlite_url)
    engine = create_engine(sqlite_url)
    async with engine.begin() as conn:
        await conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    await engine.dispose()
    with pytest.raises(DatabaseSchemaError, match="9999"):
        await Database.open(sqlite_url)


async def test_migration_sync_upgrade_for_the_cli(sqlite_url: str) -> None:
    # `support-bot db upgrade` calls the synchronous helper outside any event loop.
    assert await asyncio.to_thread(upgrade, sqlite_url) == head_revision()
    assert await asyncio.to_thread(upgrade, sqlite_url) == head_revision()
    db = await Database.open(sqlite_url, migrate=False)
    await db.close()


async def test_migration_0004_downgrade_restores_the_legacy_slack_ts(sqlite_url: str) -> None:
    db = await Database.open(sqlite_url)
    session = await db.sessions.create_session(app_name="app", user_id="u1", session_id="s1")
    await db.sessions.append_event(
        session, Event(author="user", custom_metadata={"slack_ts": "1700000000.000100"})
    )
    await db.close()
    engine = create_engine(sqlite_url)
    async with engine.begin() as conn:
        await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0003"))
        (ts, data) = (await conn.execute(sa.text("SELECT slack_ts, data FROM events"))).one()
    await engine.dispose()
    legacy = json.loads(data)
    assert ts == legacy["slack_ts"] == "1700000000.000100"
    assert "custom_metadata" not in legacy and "loop_exit" not in legacy["actions"]


async def test_migration_0015_has_the_knowledge_index_rebuilt_by_the_next_sync(
    empty_url: str, tmp_path: Path
) -> None:
    """A knowledge index written by the database's own stemmer is emptied, so the next
    sync indexes every document again as word keys."""
    assert await upgrade_async(empty_url, "0014_knowledge") == "0014_knowledge"
    engine = create_engine(empty_url)
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "INSERT INTO knowledge_documents (doc_id, collection, title, path, content_hash,"
                " indexed_at) VALUES ('faq', 'general', 'FAQ', 'faq.md', 'old', 1.0)"
            )
        )
        await conn.execute(
            sa.text(
                "INSERT INTO knowledge_sections (pk, section_id, doc_id, collection, position,"
                " heading, body) VALUES (1, 'faq#renewals', 'faq', 'general', 0, 'Renewals',"
                " 'Registrations are renewed online.')"
            )
        )
        if conn.dialect.name == "sqlite":
            fts = (
                "INSERT INTO knowledge_fts (rowid, title, heading, body)"
                " VALUES (1, 'FAQ', 'Renewals', 'Registrations are renewed online.')"
            )
        else:
            fts = (
                "INSERT INTO knowledge_fts (section_pk, document)"
                " VALUES (1, to_tsvector('english', 'Registrations are renewed online.'))"
            )
        await conn.execute(sa.text(fts))
    await engine.dispose()

    assert await upgrade_async(empty_url) == head_revision()
    (tmp_path / "faq.md").write_text(
        "# FAQ\n\n## Renewals\n\nRegistrations are renewed online.\n", encoding="utf-8"
    )
    db = await Database.open(empty_url, migrate=False)
    try:
        report = await db.knowledge.sync(load_folder(tmp_path))
        hits = await db.knowledge.search("register")
    finally:
        await db.close()
    assert report.added == ["faq"] and report.unchanged == []
    assert [h.id for h in hits] == ["faq#renewals"]
