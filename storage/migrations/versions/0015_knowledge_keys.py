"""The knowledge index holds each word's key (`agents.words.keyed`) instead of the
database's own stemming: SQLite's FTS5 table only splits words (`unicode61`, no porter),
and PostgreSQL's rows are built with the `simple` configuration by the code.

The index's rows were written the old way, so they are emptied with the documents and
sections they belong to: the next sync (at start, or `support-bot knowledge sync`) finds
no stored content hash and indexes every document again.

PostgreSQL's GIN index is rebuilt without `fastupdate`: with it, a sync's rows wait in
the index's pending list, which every search then reads through until a vacuum merges it
(the benchmark's searches took twice as long after indexing 10,000 sections). The index
is written at sync and read at every search, so it is kept merged at write time.

Revision ID: 0015_knowledge_keys
Revises: 0014_knowledge
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0015_knowledge_keys"
down_revision = "0014_knowledge"
branch_labels = None
depends_on = None


def _empty(*, tokenize: str, fastupdate: str) -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE knowledge_fts")
        op.execute(
            "CREATE VIRTUAL TABLE knowledge_fts USING fts5("
            f"title, heading, body, tokenize='{tokenize}')"
        )
    else:
        op.execute("DELETE FROM knowledge_fts")
        op.execute("DROP INDEX ix_knowledge_fts_document")
        op.execute(
            "CREATE INDEX ix_knowledge_fts_document ON knowledge_fts"
            f" USING gin (document) WITH (fastupdate = {fastupdate})"
        )
    op.execute("DELETE FROM knowledge_sections")
    op.execute("DELETE FROM knowledge_documents")


def upgrade() -> None:
    _empty(tokenize="unicode61", fastupdate="off")


def downgrade() -> None:
    _empty(tokenize="porter unicode61", fastupdate="on")
