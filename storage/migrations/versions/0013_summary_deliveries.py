"""Summary deliveries: what each consumer (digest, `/summary`, hand-off) received of a
summary, so fallback and partial rates count deliveries, not windows.

Revision ID: 0013_summary_deliveries
Revises: 0012_feedback_marker
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_summary_deliveries"
down_revision = "0012_feedback_marker"
branch_labels = None
depends_on = None

RowId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "summary_deliveries",
        sa.Column("id", RowId, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("surface", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("windows", sa.Integer, nullable=False),
        sa.Column("gaps", sa.Integer, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_summary_deliveries"),
    )


def downgrade() -> None:
    op.drop_table("summary_deliveries")
