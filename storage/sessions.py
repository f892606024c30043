"""`SqlSessionService`: the `agents.sessions.service.SessionService` contract on SQL.

An append is one short write transaction: lock the session row and take the next seq
from its counter (one `UPDATE ... RETURNING` when the event changes no session state,
else `SELECT ... FOR UPDATE` on PostgreSQL, SQLite's single writer being taken by
`BEGIN IMMEDIATE`), insert the event, advance the row, upsert app and user keys.
Nothing compares versions, so concurrent writers queue instead of failing with "stale
session" errors.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import sqlalchemy as sa
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from agents.events import Event, event_seq
from agents.metrics import REGISTRY
from agents.sessions.service import SessionNotFoundError, TransactionWrite
from agents.sessions.session import Session
from agents.sessions.state import split_delta, without_temp
from storage.decoded_events import DecodedEvents
from storage.engine import SqlGate
from storage.errors import SessionExistsError
from storage.prepared import Prepared
from storage.schema import events, sessions
from storage.scoped_state import read_app, read_scoped, read_users, write_scoped
from storage.threads import ThreadRecord

log = logging.getLogger(__name__)

# A write run inside another store's transaction: an `append_event`'s `along` (the
# runtime's `TransactionWrite`, given the connection), or an `also` of `db.inflight`.
Write = Callable[[AsyncConnection], Awaitable[None]]

CORRUPT_EVENTS_METRIC = "storage_corrupt_events_total"
REGISTRY.describe(CORRUPT_EVENTS_METRIC, "counter", "Stored events skipped as unreadable")


def _session_where(app_name: str, user_id: str, session_id: str) -> sa.ColumnElement[bool]:
    return sa.and_(
        sessions.c.app_name == app_name,
        sessions.c.user_id == user_id,
        sessions.c.session_id == session_id,
    )


# The statements of every turn, built once: a statement object that is reused keeps its
# memoised cache key, so executing it skips construction and cache-key generation (the
# bulk of SQLAlchemy's cost per statement); the compiled form comes from the cache.
_BY_KEY = sa.and_(
    sessions.c.app_name == sa.bindparam("b_app"),
    sessions.c.user_id == sa.bindparam("b_user"),
    sessions.c.session_id == sa.bindparam("b_session"),
)
_SELECT_SESSION = Prepared(sa.select(sessions).where(_BY_KEY))
_SESSION_EXISTS = Prepared(sa.select(sessions.c.pk).where(_BY_KEY))
_LOCK_FOR_APPEND = sa.select(sessions.c.pk, sessions.c.last_seq, sessions.c.state).where(_BY_KEY)
_LOCK_FOR_APPEND_PG = _LOCK_FOR_APPEND.with_for_update()
_ALL_EVENTS_QUERY = (
    sa.select(events.c.pk, events.c.data)
    .where(events.c.session_pk == sa.bindparam("b_pk"), events.c.seq <= sa.bindparam("b_last"))
    .order_by(events.c.seq)
)
_ALL_EVENTS = Prepared(_ALL_EVENTS_QUERY)
_EVENTS_SINCE_COMPACTION = Prepared(
    _ALL_EVENTS_QUERY.where(
        sa.or_(
            events.c.seq >= sa.bindparam("b_start"),
            events.c.seq == sa.bindparam("b_compaction"),
        )
    )
)
# Takes the next seq and locks the row in one statement (an UPDATE locks on PostgreSQL
# too); for appends that change no session state, the common case.
_ADVANCE = Prepared(
    sa.update(sessions)
    .where(_BY_KEY)
    .values(last_seq=sessions.c.last_seq + 1, updated_at=sa.bindparam("b_ts"))
    .returning(sessions.c.pk, sessions.c.last_seq)
)
_INSERT_EVENT = Prepared(sa.insert(events))
_REWRITE_EVENT = Prepared(
    sa.update(events)
    .where(
        events.c.session_pk == sa.select(sessions.c.pk).where(_BY_KEY).scalar_subquery(),
        events.c.event_id == sa.bindparam("b_event"),
    )
    .values(data=sa.bindparam("b_data"), custom_metadata=sa.bindparam("b_metadata"))
)
# Which columns it sets is decided by the parameters it is executed with.
_UPDATE_SESSION = sa.update(sessions).where(sessions.c.pk == sa.bindparam("b_pk"))


def _key_params(app_name: str, user_id: str, session_id: str) -> dict[str, str]:
    return {"b_app": app_name, "b_user": user_id, "b_session": session_id}


async def session_exists_in(conn: AsyncConnection, thread: ThreadRecord) -> bool:
    """Whether the session `thread` maps to is stored, inside the caller's transaction."""
    key = _key_params(thread.app_name, thread.user_id, thread.session_id)
    return bool(await _SESSION_EXISTS.rows(conn, key))


class SqlSessionService:
    """Sessions, events and scoped state in SQL; behaves like `InMemorySessionService`."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate
        # Events decoded by earlier loads, shared with later ones (`storage.decoded_events`).
        self.decoded = DecodedEvents()
        self._insert_empty = Prepared(gate.insert(sessions).on_conflict_do_nothing())

    def rewrite_in(self, thread: ThreadRecord, event: Event) -> Write:
        """A write (for another store's transaction) that stores `event` again in place of
        the event with its id in `thread`'s session: its `custom_metadata` completed once
        the transport knew it (the Slack message a reply was posted as)."""
        params = {
            **_key_params(thread.app_name, thread.user_id, thread.session_id),
            "b_event": event.id,
            "b_data": event.model_dump_json(),
            "b_metadata": dict(event.custom_metadata) or None,
        }

        async def write(conn: AsyncConnection) -> None:
            await _REWRITE_EVENT.rowcount(conn, params)

        return write

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        sid = session_id or uuid.uuid4().hex
        app, user, own = split_delta(state or {})
        now = time.time()

        async def tx(conn: AsyncConnection) -> dict[str, Any]:
            inserted = await conn.execute(
                self._gate.insert(sessions)
                .values(
                    app_name=app_name,
                    user_id=user_id,
                    session_id=sid,
                    state=own,
                    created_at=now,
                    updated_at=now,
                )
                .on_conflict_do_nothing()
                .returning(sessions.c.pk)
            )
            if inserted.first() is None:
                raise SessionExistsError(f"session {sid} already exists")
            await write_scoped(
                self._gate, conn, app_name=app_name, user_id=user_id, app=app, user=user, now=now
            )
            return await _merged_state(conn, app_name, user_id, own)

        merged = await self._gate.write(tx)
        return Session(
            id=sid,
            app_name=app_name,
            user_id=user_id,
            state=merged,
            created_at=now,
            last_update_time=now,
        )

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        since_compaction: bool = False,
    ) -> Session | None:
        async def tx(conn: AsyncConnection) -> Session | None:
            key = _key_params(app_name, user_id, session_id)
            found = await _SELECT_SESSION.mappings(conn, key)
            if not found:
                return None
            row = found[0]
            params = {"b_pk": row["pk"], "b_last": row["last_seq"]}
            windowed = since_compaction and row["compaction_seq"] > 0
            query = _ALL_EVENTS
            if windowed:
                query = _EVENTS_SINCE_COMPACTION
                params.update(
                    b_start=row["compaction_start_seq"], b_compaction=row["compaction_seq"]
                )
            event_rows = await query.rows(conn, params)
            return Session(
                id=session_id,
                app_name=app_name,
                user_id=user_id,
                state=await _merged_state(conn, app_name, user_id, row["state"]),
                events=_decode(event_rows, session_id, self.decoded),
                created_at=row["created_at"],
                last_update_time=row["updated_at"],
                events_complete=not windowed or len(event_rows) == row["last_seq"],
            )

        return await self._gate.read(tx)

    async def of_thread(
        self, thread: ThreadRecord, *, since_compaction: bool = False
    ) -> Session | None:
        """The session `thread` maps to, or None when it does not exist (yet)."""
        return await self.get_session(
            app_name=thread.app_name,
            user_id=thread.user_id,
            session_id=thread.session_id,
            since_compaction=since_compaction,
        )

    async def ensure_of_thread(
        self, thread: ThreadRecord, *, since_compaction: bool = False
    ) -> Session:
        """The session `thread` maps to, created empty when missing: a thread is mapped
        before its session is written. Insert-or-get: when another process creates it
        between the read and the insert, that session is returned."""
        session = await self.of_thread(thread, since_compaction=since_compaction)
        if session is not None:
            return session
        try:
            return await self.create_session(
                app_name=thread.app_name, user_id=thread.user_id, session_id=thread.session_id
            )
        except SessionExistsError:
            session = await self.of_thread(thread, since_compaction=since_compaction)
            if session is None:
                raise
            return session

    async def ensure_exists(self, thread: ThreadRecord) -> None:
        """Create the session `thread` maps to, empty, when it is missing, without loading
        it."""

        async def exists(conn: AsyncConnection) -> bool:
            return await session_exists_in(conn, thread)

        async def create(conn: AsyncConnection) -> None:
            now = time.time()
            await self._insert_empty.rowcount(
                conn,
                {
                    "app_name": thread.app_name,
                    "user_id": thread.user_id,
                    "session_id": thread.session_id,
                    "state": {},
                    "created_at": now,
                    "updated_at": now,
                },
            )

        if not await self._gate.read(exists):
            await self._gate.write(create)

    async def append_event(
        self, session: Session, event: Event, *, along: TransactionWrite | None = None
    ) -> Event:
        """See `SessionService`: `along` is given this transaction's connection, first."""
        delta = without_temp(event.actions.state_delta)
        actions = event.actions.model_copy(update={"state_delta": delta})
        app, user, own = split_delta(delta)
        compaction = event.actions.compaction

        lock = _LOCK_FOR_APPEND if self._gate.is_sqlite else _LOCK_FOR_APPEND_PG
        key = _key_params(session.app_name, session.user_id, session.id)

        async def tx(conn: AsyncConnection) -> tuple[Event, str]:
            if along is not None:
                await along(conn)
            advanced = not own and compaction is None
            if advanced:
                advance = await _ADVANCE.rows(conn, {**key, "b_ts": event.timestamp})
                row = advance[0] if advance else None
            else:
                row = (await conn.execute(lock, key)).first()
            if row is None:
                raise SessionNotFoundError(session.id)
            pk, last_seq = row[0], row[1]
            seq = last_seq if advanced else last_seq + 1
            stored = event.model_copy(update={"id": f"e{seq}", "actions": actions})
            data = stored.model_dump_json()
            await _INSERT_EVENT.rowcount(
                conn,
                {
                    "session_pk": pk,
                    "seq": seq,
                    "event_id": stored.id,
                    "invocation_id": stored.invocation_id,
                    "author": stored.author,
                    "timestamp": stored.timestamp,
                    "data": data,
                    "custom_metadata": dict(stored.custom_metadata) or None,
                },
            )
            if not advanced:
                changes: dict[str, Any] = {"b_pk": pk, "last_seq": seq}
                changes["updated_at"] = stored.timestamp
                if own:
                    changes["state"] = {**row.state, **own}
                if compaction is not None:
                    changes["compaction_seq"] = seq
                    changes["compaction_start_seq"] = event_seq(compaction.start_event_id)
                await conn.execute(_UPDATE_SESSION, changes)
            await write_scoped(
                self._gate,
                conn,
                app_name=session.app_name,
                user_id=session.user_id,
                app=app,
                user=user,
                now=stored.timestamp,
            )
            return stored, data

        stored, data = await self._gate.write(tx)
        self.decoded.remember(data, stored)
        session.events.append(stored)
        session.state.update(delta)
        session.last_update_time = stored.timestamp
        return stored

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> list[Session]:
        async def tx(conn: AsyncConnection) -> list[Session]:
            query = sa.select(sessions).where(sessions.c.app_name == app_name)
            if user_id is not None:
                query = query.where(sessions.c.user_id == user_id)
            rows = (await conn.execute(query.order_by(sessions.c.pk))).all()
            app = await read_app(conn, app_name)
            users = await read_users(conn, app_name, None if user_id is None else [user_id])
            return [
                Session(
                    id=row.session_id,
                    app_name=app_name,
                    user_id=row.user_id,
                    state={**row.state, **app, **users.get(row.user_id, {})},
                    created_at=row.created_at,
                    last_update_time=row.updated_at,
                )
                for row in rows
            ]

        return await self._gate.read(tx)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        async def tx(conn: AsyncConnection) -> None:
            where = _session_where(app_name, user_id, session_id)
            owned = sa.select(sessions.c.pk).where(where)
            await conn.execute(sa.delete(events).where(events.c.session_pk.in_(owned)))
            await conn.execute(sa.delete(sessions).where(where))

        await self._gate.write(tx)


async def _merged_state(
    conn: AsyncConnection, app_name: str, user_id: str, own: dict[str, Any]
) -> dict[str, Any]:
    app, user = await read_scoped(conn, app_name, user_id)
    return {**own, **app, **user}


def _decode(rows: Sequence[Any], session_id: str, known: DecodedEvents) -> list[Event]:
    """Events from their JSON (the ones `known` decoded before, shared); a corrupt row is
    logged and skipped, not fatal."""
    decoded = []
    for pk, data in rows:
        try:
            decoded.append(known.decode(data))
        except (ValidationError, ValueError) as exc:
            reason = str(exc).splitlines()[0]
            log.error("skipping corrupt event row %s in session %s: %s", pk, session_id, reason)
            REGISTRY.inc(CORRUPT_EVENTS_METRIC)
    return decoded
