"""One lead-channel message per thread, and DM replies under folded messages.

`digests.kind`: a "summary unavailable" notice is stored as a digest row of kind
`unavailable` before it is posted, so it is posted once even across a crash, and a
thread's later digest updates that message in place. `dm_folded`: the top-level DM
messages folded into an earlier conversation, so a reply in the Slack thread under one
joins that conversation.

Revision ID: 0010_lead_messages
Revises: 0009_feedback
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_lead_messages"
down_revision = "0009_feedback"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("digests") as batch:
        batch.add_column(sa.Column("kind", sa.String(16), nullable=False, server_default="digest"))
    op.create_table(
        "dm_folded",
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("message_ts", sa.String(32), nullable=False),
        sa.Column("root_ts", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("team_id", "channel_id", "message_ts", name="pk_dm_folded"),
    )


def downgrade() -> None:
    op.drop_table("dm_folded")
    with op.batch_alter_table("digests") as batch:
        batch.drop_column("kind")
