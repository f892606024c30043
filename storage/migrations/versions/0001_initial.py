"""Initial schema: sessions, events, app and user state, threads, deliveries, digests,
memory and summary runs.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

RowId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("pk", RowId, primary_key=True, autoincrement=True),
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("state", sa.JSON, nullable=False),
        sa.Column("last_seq", sa.Integer, nullable=False, server_default="0"),
        sa.Column("compaction_seq", sa.Integer, nullable=False, server_default="0"),
        sa.Column("compaction_start_seq", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("pk", name="pk_sessions"),
        sa.UniqueConstraint(
            "app_name", "user_id", "session_id", name="uq_sessions_app_name_user_id_session_id"
        ),
    )
    op.create_index("ix_sessions_user_id", "sessions", ["user_id"])

    op.create_table(
        "events",
        sa.Column("pk", RowId, primary_key=True, autoincrement=True),
        sa.Column("session_pk", RowId, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("event_id", sa.String(32), nullable=False),
        sa.Column("invocation_id", sa.String(64), nullable=False),
        sa.Column("author", sa.String(128), nullable=False),
        sa.Column("timestamp", sa.Float, nullable=False),
        sa.Column("slack_ts", sa.String(32), nullable=True),
        sa.Column("data", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("pk", name="pk_events"),
        sa.ForeignKeyConstraint(
            ["session_pk"],
            ["sessions.pk"],
            name="fk_events_session_pk_sessions",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("session_pk", "seq", name="uq_events_session_pk_seq"),
    )

    op.create_table(
        "app_state",
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("value", sa.JSON, nullable=True),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("app_name", "key", name="pk_app_state"),
    )

    op.create_table(
        "user_state",
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("value", sa.JSON, nullable=True),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "key", name="pk_user_state"),
    )
    op.create_index("ix_user_state_user_id", "user_state", ["user_id"])

    op.create_table(
        "threads",
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False, server_default="active"),
        sa.Column("owner_agent", sa.String(128), nullable=True),
        sa.Column("last_activity_at", sa.Float, nullable=False),
        sa.Column("needs_attention", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("attention_reason", sa.Text, nullable=True),
        sa.Column("digest_state", sa.String(16), nullable=False, server_default="pending"),
        sa.Column("last_digest_id", RowId, nullable=True),
        sa.Column("last_digested_seq", sa.Integer, nullable=False, server_default="0"),
        sa.Column("lease_owner", sa.String(128), nullable=True),
        sa.Column("lease_expires_at", sa.Float, nullable=True),
        sa.Column("source_session_id", sa.String(128), nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("team_id", "channel_id", "thread_ts", name="pk_threads"),
    )
    op.create_index("ix_threads_session_id", "threads", ["session_id"])
    op.create_index("ix_threads_user_id", "threads", ["user_id"])
    op.create_index("ix_threads_last_activity_at", "threads", ["last_activity_at"])

    op.create_table(
        "deliveries",
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_deliveries"),
    )
    op.create_index("ix_deliveries_created_at", "deliveries", ["created_at"])

    op.create_table(
        "digests",
        sa.Column("id", RowId, primary_key=True, autoincrement=True),
        sa.Column("record", sa.JSON, nullable=False),
        sa.Column("source_session_id", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=True),
        sa.Column("team_id", sa.String(32), nullable=True),
        sa.Column("channel_id", sa.String(32), nullable=True),
        sa.Column("thread_ts", sa.String(32), nullable=True),
        sa.Column("cited_event_ids", sa.JSON, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("problems", sa.JSON, nullable=False),
        sa.Column("cost", sa.Float, nullable=False),
        sa.Column("prompt_tokens", sa.Integer, nullable=False),
        sa.Column("completion_tokens", sa.Integer, nullable=False),
        sa.Column("slack_ts", sa.String(32), nullable=True),
        sa.Column("supersedes_digest_id", RowId, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_digests"),
    )
    op.create_index("ix_digests_source_session_id", "digests", ["source_session_id"])
    op.create_index("ix_digests_user_id", "digests", ["user_id"])

    op.create_table(
        "memory",
        sa.Column("id", RowId, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("event_ids", sa.JSON, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_memory"),
    )
    op.create_index("ix_memory_user_id", "memory", ["user_id"])

    op.create_table(
        "summary_runs",
        sa.Column("id", RowId, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("first_attempt_pass", sa.Boolean, nullable=False),
        sa.Column("fallback", sa.Boolean, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("problems", sa.JSON, nullable=False),
        sa.Column("prompt_tokens", sa.Integer, nullable=False),
        sa.Column("completion_tokens", sa.Integer, nullable=False),
        sa.Column("cost", sa.Float, nullable=False),
        sa.Column("latency_s", sa.Float, nullable=False),
        sa.Column("model", sa.String(128), nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_summary_runs"),
    )
    op.create_index("ix_summary_runs_session_id", "summary_runs", ["session_id"])


def downgrade() -> None:
    for table in (
        "summary_runs",
        "memory",
        "digests",
        "deliveries",
        "threads",
        "user_state",
        "app_state",
        "events",
        "sessions",
    ):
        op.drop_table(table)
