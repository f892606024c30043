"""DM conversations and every page of a posted digest.

A top-level DM message continues the DM's current conversation (`dm_conversations`:
its root message and last activity) instead of starting a thread of its own. Each
Slack message a digest was posted as is recorded (`digest_messages`), so deleting a
digest deletes every page of it.

Revision ID: 0008_limits
Revises: 0007_stream
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_limits"
down_revision = "0007_stream"
branch_labels = None
depends_on = None

RowId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "digest_messages",
        sa.Column("digest_id", RowId, nullable=False),
        sa.Column("page", sa.Integer, nullable=False),
        sa.Column("ts", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("digest_id", "page", name="pk_digest_messages"),
    )
    op.create_table(
        "dm_conversations",
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("root_ts", sa.String(32), nullable=False),
        sa.Column("last_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("team_id", "channel_id", name="pk_dm_conversations"),
    )


def downgrade() -> None:
    op.drop_table("dm_conversations")
    op.drop_table("digest_messages")
