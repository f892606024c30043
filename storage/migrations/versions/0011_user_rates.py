"""Per-user request counts in the database, so a rate holds across processes.

`user_rates`: one row per user with the start of their current window, the requests
counted in it, and whether they were told they are over the limit (`storage.rates`).

Revision ID: 0011_user_rates
Revises: 0010_lead_messages
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_user_rates"
down_revision = "0010_lead_messages"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "user_rates",
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("window_start", sa.Float, nullable=False),
        sa.Column("count", sa.Integer, nullable=False),
        sa.Column("told", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_user_rates"),
    )


def downgrade() -> None:
    op.drop_table("user_rates")
