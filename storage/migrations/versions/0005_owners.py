"""Process heartbeats (`owners`), so a peer's work is taken over only once it stops beating.

Every bot process records its identity and the time of its last heartbeat; in-flight
messages and digest leases whose owner has not beaten for a while are taken over by a
live process, whatever their age. Digests record the last event they cover (`last_seq`),
unique per session, so one `(session, last event)` is digested once whichever process
gets there.

Revision ID: 0005
Revises: 0004
Create Date: 2025-01-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "owners",
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("beat_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("owner", name="pk_owners"),
    )
    op.create_index("ix_owners_beat_at", "owners", ["beat_at"])
    with op.batch_alter_table("digests") as batch:
        batch.add_column(sa.Column("last_seq", sa.Integer, nullable=True))
    op.create_index(
        "ix_digests_session_last_seq", "digests", ["source_session_id", "last_seq"], unique=True
    )


def downgrade() -> None:
    op.drop_index("ix_digests_session_last_seq", table_name="digests")
    with op.batch_alter_table("digests") as batch:
        batch.drop_column("last_seq")
    op.drop_index("ix_owners_beat_at", table_name="owners")
    op.drop_table("owners")
