"""Events carry `custom_metadata` (the caller's own data) instead of a `slack_ts` column.

The runtime no longer knows Slack: an event's transport data rides in its
`custom_metadata` mapping, which is kept in the event's JSON and, for queries, in a
JSON column. Each old row's `slack_ts` (column and JSON field) moves under the key the
bot stamps, `"slack_ts"`, so earlier citations still become permalinks.

Revision ID: 0004
Revises: 0003
Create Date: 2025-01-04
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# The bot's key (`bot.slack.message_ts.SLACK_TS`) as of this revision.
LEGACY_KEY = "slack_ts"
BATCH = 1000

_events = sa.table(
    "events",
    sa.column("pk", sa.BigInteger),
    sa.column("data", sa.Text),
    sa.column("slack_ts", sa.String(32)),
    sa.column("custom_metadata", sa.JSON),
)


def upgrade() -> None:
    op.add_column("events", sa.Column("custom_metadata", sa.JSON, nullable=True))
    _rewrite(_to_metadata)
    with op.batch_alter_table("events") as batch:
        batch.drop_column("slack_ts")


def downgrade() -> None:
    op.add_column("events", sa.Column("slack_ts", sa.String(32), nullable=True))
    _rewrite(_to_legacy)
    with op.batch_alter_table("events") as batch:
        batch.drop_column("custom_metadata")


def _to_metadata(data: dict[str, Any], row: Any) -> dict[str, Any]:
    ts = data.pop(LEGACY_KEY, None) or row.slack_ts
    metadata = {LEGACY_KEY: ts} if ts else {}
    data["custom_metadata"] = metadata
    return {"b_data": data, "b_meta": metadata or None, "b_ts": None}


def _to_legacy(data: dict[str, Any], row: Any) -> dict[str, Any]:
    metadata = data.pop("custom_metadata", None) or row.custom_metadata or {}
    ts = metadata.get(LEGACY_KEY) if isinstance(metadata, dict) else None
    data[LEGACY_KEY] = ts
    # Code before 0004 also rejects the (same-release) empty `actions.loop_exit` field.
    actions = data.get("actions")
    if isinstance(actions, dict) and actions.get("loop_exit") is None:
        actions.pop("loop_exit", None)
    return {"b_data": data, "b_meta": None, "b_ts": ts}


def _rewrite(convert: Callable[[dict[str, Any], Any], dict[str, Any]]) -> None:
    """Rewrite every event's JSON and columns in batches of `BATCH` rows, by primary key.

    A row whose JSON does not parse is left alone: loading already skips it as corrupt.
    """
    conn = op.get_bind()
    update = (
        sa.update(_events)
        .where(_events.c.pk == sa.bindparam("b_pk"))
        .values(
            data=sa.bindparam("b_data"),
            custom_metadata=sa.bindparam("b_meta", type_=sa.JSON),
            slack_ts=sa.bindparam("b_ts"),
        )
    )
    last = 0
    while True:
        rows = conn.execute(
            sa.select(_events).where(_events.c.pk > last).order_by(_events.c.pk).limit(BATCH)
        ).all()
        if not rows:
            return
        changes = []
        for row in rows:
            try:
                data = json.loads(row.data)
            except ValueError:
                continue
            if not isinstance(data, dict):
                continue
            change = convert(data, row)
            change["b_pk"] = row.pk
            change["b_data"] = json.dumps(change["b_data"], separators=(",", ":"))
            changes.append(change)
        if changes:
            conn.execute(update, changes)
        last = rows[-1].pk
