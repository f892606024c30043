"""The streamed reply of an in-flight message (`inflight.stream_ts`).

A reply streamed into Slack (`chat.startStream`) is one message from its first delta;
its ts is kept like the placeholder's, so that after a crash the recovery finishes that
message (or tells the thread in it) instead of posting a second one.

Revision ID: 0007_stream
Revises: 0006_windows
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_stream"
down_revision = "0006_windows"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("inflight") as batch:
        batch.add_column(sa.Column("stream_ts", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("inflight") as batch:
        batch.drop_column("stream_ts")
