"""State that deleted turns wrote, put back to what the remaining events say.

A turn's events carry `state_delta`s: an agent's `output_key` value (`billing_summary`,
`diagnosis`, ...) in the session's state, `user:` keys in the state of the session's
user (the thread's owner, whoever spoke), and `app:` keys shared by the app. Deleting
the turn's events leaves those values where they were written, so `forget` hands every
key the deleted events wrote to `restore_written_state`: each key takes the value of the
latest remaining event that writes it (in the same session, the owner's sessions, or the
app's, by scope), and is removed where none does. A value a session was created with,
before any event, is not known to the events, so such a key is removed too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agents.events import Event
from agents.sessions.state import split_delta
from storage.schema import app_state, events, sessions, user_state


@dataclass
class WrittenState:
    """The keys deleted events wrote, per session and by scope."""

    session: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))
    user: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))
    app: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))

    def add(self, session_pk: int, data: str) -> None:
        """Note the keys the stored event `data` (of session `session_pk`) wrote."""
        delta = Event.model_validate_json(data).actions.state_delta
        app, user, own = split_delta(delta)
        self.session[session_pk].update(own)
        self.user[session_pk].update(user)
        self.app[session_pk].update(app)


async def written_by(conn: AsyncConnection, where: sa.ColumnElement[bool]) -> WrittenState:
    """The keys written by the events `where` selects (read before they are deleted)."""
    written = WrittenState()
    rows = await conn.execute(sa.select(events.c.session_pk, events.c.data).where(where))
    for session_pk, data in rows:
        written.add(session_pk, data)
    return written


async def restore_written_state(conn: AsyncConnection, written: WrittenState) -> dict[str, int]:
    """After the events are deleted: each written key back to its latest remaining value,
    or removed. Returns how many keys were changed, by scope."""
    counts = {"session_state": 0, "owner_user_state": 0, "app_state": 0}
    pks = set(written.session) | set(written.user) | set(written.app)
    if not pks:
        return counts  # every kind is reported, even when none was written
    rows = await conn.execute(
        sa.select(sessions.c.pk, sessions.c.app_name, sessions.c.user_id, sessions.c.state).where(
            sessions.c.pk.in_(pks)
        )
    )
    for pk, app_name, owner, state in rows.all():
        own_keys = written.session.get(pk, set())
        if own_keys:
            counts["session_state"] += await _restore_session(conn, pk, dict(state), own_keys)
        mine = sessions.c.app_name == app_name
        for key in sorted(written.user.get(pk, ())):
            latest = await _latest(conn, key, sa.and_(mine, sessions.c.user_id == owner))
            where = sa.and_(
                user_state.c.app_name == app_name,
                user_state.c.user_id == owner,
                user_state.c.key == key,
            )
            counts["owner_user_state"] += await _put(conn, user_state, where, latest)
        for key in sorted(written.app.get(pk, ())):
            latest = await _latest(conn, key, mine)
            where = sa.and_(app_state.c.app_name == app_name, app_state.c.key == key)
            counts["app_state"] += await _put(conn, app_state, where, latest)
    return counts


async def _restore_session(
    conn: AsyncConnection, pk: int, state: dict[str, Any], keys: Iterable[str]
) -> int:
    changed = 0
    for key in sorted(keys):
        latest = await _latest(conn, key, sessions.c.pk == pk)
        if latest:
            changed += state.get(key) != latest[0]
            state[key] = latest[0]
        elif key in state:
            changed += 1
            del state[key]
    await conn.execute(sa.update(sessions).where(sessions.c.pk == pk).values(state=state))
    return changed


async def _latest(
    conn: AsyncConnection, key: str, sessions_where: sa.ColumnElement[bool]
) -> tuple[Any] | tuple[()]:
    """(value,) of the latest remaining event in the sessions `sessions_where` selects
    that writes `key`; () when none does. Only events whose text names the key are
    decoded."""
    rows = await conn.execute(
        sa.select(events.c.data)
        .join(sessions, sessions.c.pk == events.c.session_pk)
        .where(sessions_where, events.c.data.contains(f'"{key}"', autoescape=True))
        .order_by(events.c.timestamp.desc(), events.c.seq.desc())
    )
    for (data,) in rows:
        delta = Event.model_validate_json(data).actions.state_delta
        if key in delta:
            return (delta[key],)
    return ()


async def _put(
    conn: AsyncConnection, table: sa.Table, where: sa.ColumnElement[bool], latest: tuple[Any, ...]
) -> int:
    """Set the row `where` selects to the value in `latest`, or delete it: rows changed."""
    if latest:
        statement: Any = sa.update(table).where(where).values(value=latest[0])
    else:
        statement = sa.delete(table).where(where)
    return int((await conn.execute(statement)).rowcount)
