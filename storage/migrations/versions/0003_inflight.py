"""Track accepted Slack messages until they are answered (`inflight`).

A message is recorded before the HTTP ack and removed once its reply or failure notice
is posted, so a process killed mid-invocation leaves rows that the next start-up turns
into a re-run (never started) or a "a person will follow up" notice (started).

Revision ID: 0003
Revises: 0002
Create Date: 2025-01-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "inflight",
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("message_ts", sa.String(32), nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=False),
        sa.Column("message", sa.JSON, nullable=False),
        sa.Column("stage", sa.String(16), nullable=False, server_default="accepted"),
        sa.Column("invocation_id", sa.String(64), nullable=True),
        sa.Column("placeholder_ts", sa.String(32), nullable=True),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("accepted_at", sa.Float, nullable=False),
        sa.Column("started_at", sa.Float, nullable=True),
        sa.PrimaryKeyConstraint("team_id", "channel_id", "message_ts", name="pk_inflight"),
    )
    op.create_index("ix_inflight_owner", "inflight", ["owner"])


def downgrade() -> None:
    op.drop_index("ix_inflight_owner", table_name="inflight")
    op.drop_table("inflight")
