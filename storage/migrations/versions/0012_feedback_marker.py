"""Who marked a reply: the thread's customer or the support staff.

`feedback.marker`: `customer` when the person who clicked owns the thread, `staff`
otherwise, so a digest says who marked (rows from before count as the customer's, as
digests reported them).

Revision ID: 0012_feedback_marker
Revises: 0011_user_rates
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_feedback_marker"
down_revision = "0011_user_rates"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("feedback") as batch:
        batch.add_column(
            sa.Column("marker", sa.String(16), nullable=False, server_default="customer")
        )


def downgrade() -> None:
    with op.batch_alter_table("feedback") as batch:
        batch.drop_column("marker")
