"""The knowledge index on a real SQLite file and the embedded PostgreSQL: incremental
sync by content hash, deleted files leaving the index, collections and ranking."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from agents import words
from agents.knowledge.documents import load_folder
from storage import Database


def _write(root: Path, relative: str, text: str) -> None:
    file = root / relative
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")


def _sample(root: Path) -> None:
    _write(
        root,
        "billing/refunds.md",
        "url: https://help.example.com/refunds\n# Refund policy\n\n"
        "## Duplicate charges\n\nA duplicate charge is refunded in full within 5 days.\n\n"
        "## Refund window\n\nRefunds are possible within 30 days of the invoice.\n",
    )
    _write(
        root,
        "tech/errors.md",
        "# Troubleshooting\n\n## Error 0x80070005\n\nAccess denied: run the installer as "
        "an administrator.\n\n## HTTP 429\n\nToo many requests: wait a minute and retry.\n",
    )
    _write(root, "faq.md", "# Account FAQ\n\n## How do I reset my password?\n\nUse the link.\n")


async def test_knowledge_sync_is_incremental_by_content_hash(db: Database, tmp_path: Path) -> None:
    _sample(tmp_path)
    first = await db.knowledge.sync(load_folder(tmp_path))
    assert (first.added, first.updated, first.removed, first.unchanged) == (
        ["billing/refunds", "faq", "tech/errors"],
        [],
        [],
        [],
    )
    again = await db.knowledge.sync(load_folder(tmp_path))
    assert again.summary() == "0 added, 0 updated, 0 removed, 3 unchanged"

    _write(
        tmp_path, "tech/errors.md", "# Troubleshooting\n\n## Error 0x80070057\n\nBad parameter.\n"
    )
    (tmp_path / "faq.md").unlink()
    _write(tmp_path, "accounts/signup.md", "# Sign-up\n\n## Verification e-mail\n\nCheck spam.\n")
    changed = await db.knowledge.sync(load_folder(tmp_path))
    assert (changed.added, changed.updated, changed.removed, changed.unchanged) == (
        ["accounts/signup"],
        ["tech/errors"],
        ["faq"],
        ["billing/refunds"],
    )
    assert await db.knowledge.search("0x80070005 access denied") == []
    assert [h.id for h in await db.knowledge.search("0x80070057")] == [
        "tech/errors#error-0x80070057"
    ]
    assert await db.knowledge.search("reset password") == []
    assert await db.knowledge.collections() == {"accounts": 1, "billing": 1, "tech": 1}
    async with db.engine.connect() as conn:
        sections = (await conn.execute(sa.text("SELECT count(*) FROM knowledge_sections"))).scalar()
        indexed = (await conn.execute(sa.text("SELECT count(*) FROM knowledge_fts"))).scalar()
    assert sections == indexed == 4


async def test_a_change_of_the_word_keys_indexes_every_document_again(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index stores each document's hash with the keys' version: a new version
    (keys changed by an upgrade) re-indexes every document at the next sync."""
    _sample(tmp_path)
    await db.knowledge.sync(load_folder(tmp_path))
    monkeypatch.setattr(words, "KEYS_VERSION", words.KEYS_VERSION + 1)
    again = await db.knowledge.sync(load_folder(tmp_path))
    assert again.summary() == "0 added, 3 updated, 0 removed, 0 unchanged"
    assert (await db.knowledge.sync(load_folder(tmp_path))).summary() == (
        "0 added, 0 updated, 0 removed, 3 unchanged"
    )
    assert [h.id for h in await db.knowledge.search("0x80070005")] == [
        "tech/errors#error-0x80070005"
    ]


async def test_knowledge_search_ranks_and_cites(db: Database, tmp_path: Path) -> None:
    _sample(tmp_path)
    await db.knowledge.sync(load_folder(tmp_path))
    hits = await db.knowledge.search("I was charged twice, can I get a refund of the duplicate?")
    top = hits[0]
    assert (top.id, top.title, top.heading, top.url) == (
        "billing/refunds#duplicate-charges",
        "Refund policy",
        "Duplicate charges",
        "https://help.example.com/refunds",
    )
    assert "refunded in full within 5 days" in top.text
    assert top.source() == {
        "id": "billing/refunds#duplicate-charges",
        "title": "Refund policy",
        "heading": "Duplicate charges",
        "url": "https://help.example.com/refunds",
        "collection": "billing",
    }
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_knowledge_search_only_in_given_collections(db: Database, tmp_path: Path) -> None:
    _sample(tmp_path)
    await db.knowledge.sync(load_folder(tmp_path))
    query = "refund error password"
    everywhere = {h.collection for h in await db.knowledge.search(query, limit=10)}
    assert everywhere == {"billing", "tech", "general"}
    only = await db.knowledge.search(query, collections=["tech"], limit=10)
    assert {h.collection for h in only} == {"tech"}
    assert await db.knowledge.search("refund", collections=["accounts"]) == []


async def test_knowledge_search_of_only_stopwords_or_symbols(db: Database, tmp_path: Path) -> None:
    _sample(tmp_path)
    await db.knowledge.sync(load_folder(tmp_path))
    assert await db.knowledge.search('"); DROP TABLE knowledge_fts; --') == []
    assert await db.knowledge.search("?!") == []
    assert await db.knowledge.search("refund", limit=0) == []


async def test_knowledge_search_is_two_statements_whatever_the_query_length(
    db: Database, tmp_path: Path
) -> None:
    """Candidates, then every term's document frequency in one statement: the round
    trips do not grow with the question (the corpus lengths are read once and reused)."""
    _sample(tmp_path)
    await db.knowledge.sync(load_folder(tmp_path))
    await db.knowledge.search("refund")
    statements: list[str] = []

    def seen(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement)

    sa.event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
    try:
        short = await db.knowledge.search("refund")
        count = len(statements)
        long = await db.knowledge.search(
            "duplicate charge refund window invoice error access denied administrator retry"
        )
    finally:
        sa.event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
    assert short and long
    searches = [s for s in statements if "knowledge_fts" in s]
    assert len(searches) == 4
    assert len(statements) - count == count


async def test_knowledge_sync_indexes_every_document_in_four_statements(
    db: Database, tmp_path: Path
) -> None:
    """Documents, sections and full-text rows are each one insert, and the sections'
    keys one read, however many documents a sync adds."""
    _sample(tmp_path)
    statements: list[str] = []

    def seen(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement)

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", seen)
    try:
        report = await db.knowledge.sync(load_folder(tmp_path))
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", seen)
    assert len(report.added) == 3
    inserts = [s.split("(")[0].split()[-1] for s in statements if s.startswith("INSERT")]
    assert inserts == ["knowledge_documents", "knowledge_sections", "knowledge_fts"]
    keys = [s for s in statements if s.startswith("SELECT knowledge_sections.section_id")]
    assert len(keys) == 1


async def test_knowledge_search_finds_a_word_in_another_form(db: Database, tmp_path: Path) -> None:
    """A section is found by any form of its word that shares the word's key: the
    index holds the keys the re-ranking compares ("register" and "registration")."""
    _write(
        tmp_path,
        "vehicles.md",
        "# Vehicles\n\n## Plates\n\nNew plates are mailed.\n\n"
        "## Registration renewal\n\nRenewals of registrations take ten days.\n",
    )
    await db.knowledge.sync(load_folder(tmp_path))
    assert [h.id for h in await db.knowledge.search("How do I register?")] == [
        "vehicles#registration-renewal"
    ]
    assert [h.id for h in await db.knowledge.search("registered")] == [
        "vehicles#registration-renewal"
    ]


async def test_knowledge_search_ranks_alike_on_sqlite_and_postgres(
    sqlite_url: str, postgres_url: str, tmp_path: Path
) -> None:
    """The same question gets the same sections with the same scores on both databases,
    words their own stemmers split differently included ("news" is "new" to FTS5's porter
    and "news" to PostgreSQL's English stemmer; "NYS" is "ny" to porter only)."""
    _sample(tmp_path)
    _write(
        tmp_path,
        "news.md",
        "# News\n\n## New plans\n\nNews of new plans for NYS customers.\n\n"
        "## Refund news\n\nRefund news: refunds are faster in NY.\n",
    )
    documents = load_folder(tmp_path)
    found = []
    for url in (sqlite_url, postgres_url):
        db = await Database.open(url)
        try:
            await db.knowledge.sync(documents)
            found.append(
                [
                    [(h.id, h.score) for h in await db.knowledge.search(query, limit=10)]
                    for query in ("new refund", "news for ny customers", "duplicate refunds")
                ]
            )
        finally:
            await db.close()
    assert all(found[0]) and found[0] == found[1]


async def test_knowledge_search_prefers_the_opening_of_a_matching_document(
    db: Database, tmp_path: Path
) -> None:
    """A question about what a page is about is answered by the page's opening section,
    not by a later one that shares its words just as well."""
    _write(
        tmp_path,
        "plans.md",
        "# Graduated repayment plan\n\n## Payments start low\n\n"
        "Payments under the graduated plan start low and grow every two years.\n\n"
        "## Calculator\n\n"
        "The calculator estimates graduated plan payments from your income.\n",
    )
    _write(tmp_path, "other.md", "# Income\n\n## Income records\n\nKeep your records.\n")
    await db.knowledge.sync(load_folder(tmp_path))
    hits = await db.knowledge.search("How does the graduated repayment plan work?")
    assert [h.id for h in hits][:2] == [
        "plans#payments-start-low",
        "plans#calculator",
    ]
    assert (hits[0].position, hits[1].position) == (0, 1)
