"""Window records: one validated handoff record (or a named gap) per window of a
session's events, so a digest at idle summarises only the events since the last window.

Revision ID: 0006_windows
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_windows"
down_revision = "0005"
branch_labels = None
depends_on = None

RowId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "summary_windows",
        sa.Column("id", RowId, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("start_seq", sa.Integer, nullable=False),
        sa.Column("end_seq", sa.Integer, nullable=False),
        sa.Column("start_event_id", sa.String(32), nullable=False),
        sa.Column("end_event_id", sa.String(32), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("closed", sa.Boolean, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("record", sa.JSON, nullable=True),
        sa.Column("problems", sa.JSON, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("first_attempt_pass", sa.Boolean, nullable=False),
        sa.Column("prompt_tokens", sa.Integer, nullable=False),
        sa.Column("completion_tokens", sa.Integer, nullable=False),
        sa.Column("cost", sa.Float, nullable=False),
        sa.Column("latency_s", sa.Float, nullable=False),
        sa.Column("closed_by", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_summary_windows"),
        sa.UniqueConstraint(
            "session_id", "start_seq", name="uq_summary_windows_session_id_start_seq"
        ),
    )


def downgrade() -> None:
    op.drop_table("summary_windows")
