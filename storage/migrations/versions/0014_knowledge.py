"""The knowledge base: documents, their sections, and a full-text index over the sections.

SQLite gets an FTS5 virtual table (BM25, porter stemming) whose rowid is the section's
`pk`; PostgreSQL gets a table of weighted `tsvector`s (title A, heading B, body D) under a
GIN index. Both are named `knowledge_fts` and are left out of the SQLAlchemy metadata.

Revision ID: 0014_knowledge
Revises: 0013_summary_deliveries
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_knowledge"
down_revision = "0013_summary_deliveries"
branch_labels = None
depends_on = None

RowId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "knowledge_documents",
        sa.Column("doc_id", sa.String(255), nullable=False),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("url", sa.Text, nullable=True),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("indexed_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("doc_id", name="pk_knowledge_documents"),
    )
    op.create_table(
        "knowledge_sections",
        sa.Column("pk", RowId, autoincrement=True, nullable=False),
        sa.Column("section_id", sa.String(400), nullable=False),
        sa.Column("doc_id", sa.String(255), nullable=False),
        sa.Column("collection", sa.String(64), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("heading", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("pk", name="pk_knowledge_sections"),
        sa.ForeignKeyConstraint(
            ["doc_id"],
            ["knowledge_documents.doc_id"],
            name="fk_knowledge_sections_doc_id_knowledge_documents",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("section_id", name="uq_knowledge_sections_section_id"),
    )
    op.create_index("ix_knowledge_sections_doc_id", "knowledge_sections", ["doc_id"])
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE VIRTUAL TABLE knowledge_fts USING fts5("
            "title, heading, body, tokenize='porter unicode61')"
        )
    else:
        op.execute(
            "CREATE TABLE knowledge_fts ("
            " section_pk BIGINT PRIMARY KEY"
            " REFERENCES knowledge_sections (pk) ON DELETE CASCADE,"
            " document tsvector NOT NULL)"
        )
        op.execute("CREATE INDEX ix_knowledge_fts_document ON knowledge_fts USING gin (document)")


def downgrade() -> None:
    op.execute("DROP TABLE knowledge_fts")
    op.drop_index("ix_knowledge_sections_doc_id", table_name="knowledge_sections")
    op.drop_table("knowledge_sections")
    op.drop_table("knowledge_documents")
