"""App and user state: one row per key, so writers to different keys never collide."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.prepared import Prepared
from storage.schema import app_state, user_state


async def write_scoped(
    gate: SqlGate,
    conn: AsyncConnection,
    *,
    app_name: str,
    user_id: str,
    app: Mapping[str, Any],
    user: Mapping[str, Any],
    now: float,
) -> None:
    """Upsert `app:` and `user:` keys. Keys go in sorted order so that concurrent
    PostgreSQL transactions lock rows in the same order and cannot deadlock."""
    if app:
        stmt = gate.insert(app_state)
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["app_name", "key"],
                set_={"value": stmt.excluded.value, "updated_at": stmt.excluded.updated_at},
            ),
            [
                {"app_name": app_name, "key": k, "value": app[k], "updated_at": now}
                for k in sorted(app)
            ],
        )
    if user:
        stmt = gate.insert(user_state)
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["app_name", "user_id", "key"],
                set_={"value": stmt.excluded.value, "updated_at": stmt.excluded.updated_at},
            ),
            [
                {
                    "app_name": app_name,
                    "user_id": user_id,
                    "key": k,
                    "value": user[k],
                    "updated_at": now,
                }
                for k in sorted(user)
            ],
        )


# App and user keys of one session's user in one round trip (0 = app, 1 = user).
_SCOPED = Prepared(
    sa.union_all(
        sa.select(app_state.c.key, app_state.c.value, sa.literal(0).label("scope")).where(
            app_state.c.app_name == sa.bindparam("b_app")
        ),
        sa.select(user_state.c.key, user_state.c.value, sa.literal(1).label("scope")).where(
            user_state.c.app_name == sa.bindparam("b_app"),
            user_state.c.user_id == sa.bindparam("b_user"),
        ),
    )
)


async def read_scoped(
    conn: AsyncConnection, app_name: str, user_id: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(`app:` keys, `user:` keys of `user_id`) of one app, read in one statement."""
    found: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
    for key, value, scope in await _SCOPED.rows(conn, {"b_app": app_name, "b_user": user_id}):
        found[scope][key] = value
    return found


async def read_app(conn: AsyncConnection, app_name: str) -> dict[str, Any]:
    """All `app:` keys of one app."""
    rows = await conn.execute(
        sa.select(app_state.c.key, app_state.c.value).where(app_state.c.app_name == app_name)
    )
    return {key: value for key, value in rows}


async def read_users(
    conn: AsyncConnection, app_name: str, user_ids: Iterable[str] | None
) -> dict[str, dict[str, Any]]:
    """`user:` keys per user of one app; all of the app's users when `user_ids` is None."""
    query = sa.select(user_state.c.user_id, user_state.c.key, user_state.c.value).where(
        user_state.c.app_name == app_name
    )
    if user_ids is not None:
        query = query.where(user_state.c.user_id.in_(list(user_ids)))
    found: dict[str, dict[str, Any]] = {}
    for user_id, key, value in await conn.execute(query):
        found.setdefault(user_id, {})[key] = value
    return found
