"""Index idle-thread lookups by (digest_state, last_activity_at).

Revision 0001 indexed `threads.last_activity_at` alone, so finding idle threads also
walked every old thread that had already been digested. Leading with `digest_state`
makes `find_idle` a range scan over pending threads only.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_threads_last_activity_at", table_name="threads")
    op.create_index("ix_threads_idle", "threads", ["digest_state", "last_activity_at"])


def downgrade() -> None:
    op.drop_index("ix_threads_idle", table_name="threads")
    op.create_index("ix_threads_last_activity_at", "threads", ["last_activity_at"])
