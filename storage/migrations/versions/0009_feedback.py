"""Feedback on AI replies (`feedback`): one row per reply and person, the button they
clicked last, with the agent that wrote the reply.

Revision ID: 0009_feedback
Revises: 0008_limits
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_feedback"
down_revision = "0008_limits"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "feedback",
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("event_id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("agent", sa.String(128), nullable=False),
        sa.Column("value", sa.String(16), nullable=False),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("session_id", "event_id", "user_id", name="pk_feedback"),
    )
    op.create_index("ix_feedback_user_id", "feedback", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_feedback_user_id", table_name="feedback")
    op.drop_table("feedback")
