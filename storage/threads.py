"""The thread map: a Slack thread `(team_id, channel_id, thread_ts)` points to a session.

It also carries what the digest scheduler needs: last activity, digest progress and a
lease. `digest_state` is "pending" once the thread has had activity since its last
digest (set by `create`, `touch` and `remap`) and "digested" once a digest covered every
event; `find_idle` range-scans the (digest_state, last_activity_at) index and checks
the session row's event counter, so it never reads event rows.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, TypeAdapter
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.delivery.owners import owner_is_dead
from storage.engine import SqlGate
from storage.prepared import Prepared
from storage.schema import sessions, threads

ThreadStatus = Literal["active", "handed_off", "closed"]
DigestState = Literal["pending", "digested"]


class ThreadKey(BaseModel):
    """Identifies a Slack thread."""

    model_config = ConfigDict(frozen=True)

    team_id: str
    channel_id: str
    thread_ts: str


class ThreadRecord(BaseModel):
    """One row of the thread map."""

    team_id: str
    channel_id: str
    thread_ts: str
    session_id: str
    app_name: str
    user_id: str
    status: ThreadStatus = "active"
    owner_agent: str | None = None
    last_activity_at: float
    needs_attention: bool = False
    attention_reason: str | None = None
    digest_state: DigestState = "pending"
    last_digest_id: int | None = None
    last_digested_seq: int = 0
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    source_session_id: str | None = None
    created_at: float

    @property
    def key(self) -> ThreadKey:
        return ThreadKey(team_id=self.team_id, channel_id=self.channel_id, thread_ts=self.thread_ts)


def _key_where(key: ThreadKey) -> sa.ColumnElement[bool]:
    return sa.and_(
        threads.c.team_id == key.team_id,
        threads.c.channel_id == key.channel_id,
        threads.c.thread_ts == key.thread_ts,
    )


# Built once and reused (see `storage.sessions`); an UPDATE sets the columns named by the
# parameters it is executed with.
_BY_KEY = sa.and_(
    threads.c.team_id == sa.bindparam("b_team"),
    threads.c.channel_id == sa.bindparam("b_channel"),
    threads.c.thread_ts == sa.bindparam("b_ts"),
)
_SELECT = Prepared(sa.select(threads).where(_BY_KEY))
_UPDATE = Prepared(sa.update(threads).where(_BY_KEY).returning(threads.c.thread_ts))


def _key_params(key: ThreadKey) -> dict[str, Any]:
    return {"b_team": key.team_id, "b_channel": key.channel_id, "b_ts": key.thread_ts}


_SESSION_OF_THREAD = sa.and_(
    sessions.c.app_name == threads.c.app_name,
    sessions.c.user_id == threads.c.user_id,
    sessions.c.session_id == threads.c.session_id,
)


def lease_free(*, now: float, dead_after: float | None) -> sa.ColumnElement[bool]:
    """No lease, an expired one, or one whose owner stopped beating `dead_after` s ago."""
    free = [threads.c.lease_owner.is_(None), threads.c.lease_expires_at <= now]
    if dead_after is not None:
        free.append(owner_is_dead(threads.c.lease_owner, now=now, dead_after=dead_after))
    return sa.or_(*free)


def find_idle_query(
    *, now: float, idle_after: float, limit: int, dead_after: float | None = None
) -> sa.Select[Any]:
    """The `find_idle` SELECT; public so the benchmark can print its plan."""
    return (
        sa.select(threads)
        .join(sessions, _SESSION_OF_THREAD)
        .where(
            threads.c.digest_state == "pending",
            threads.c.last_activity_at <= now - idle_after,
            sessions.c.last_seq > threads.c.last_digested_seq,
            lease_free(now=now, dead_after=dead_after),
            # Only a thread the bot has answered at least once (it records the answering
            # agent): a message that never got a reply has nothing to hand over.
            threads.c.owner_agent.is_not(None),
        )
        .order_by(threads.c.digest_state, threads.c.last_activity_at)
        .limit(limit)
    )


def _record(row: Any) -> ThreadRecord:
    return ThreadRecord.model_validate(dict(row._mapping))


_RECORDS = TypeAdapter(list[ThreadRecord])


def _records(result: Any) -> list[ThreadRecord]:
    # One validation call for the whole batch: find_idle returns up to `limit` rows and
    # per-row model_validate(dict(row._mapping)) costs twice as much.
    keys = list(result.keys())
    return _RECORDS.validate_python([dict(zip(keys, row, strict=True)) for row in result])


async def get_in(conn: AsyncConnection, key: ThreadKey) -> ThreadRecord | None:
    """`ThreadStore.get` inside a caller's transaction."""
    found = await _SELECT.mappings(conn, _key_params(key))
    return ThreadRecord.model_validate(found[0]) if found else None


async def touch_in(
    conn: AsyncConnection, key: ThreadKey, *, now: float, owner_agent: str | None = None
) -> bool:
    """`ThreadStore.touch` inside a caller's write transaction."""
    values: dict[str, Any] = {"last_activity_at": now, "digest_state": "pending"}
    if owner_agent is not None:
        values["owner_agent"] = owner_agent
    return bool(await _UPDATE.rows(conn, {**_key_params(key), **values}))


class ThreadStore:
    """Reads and guarded updates of the thread map."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate
        self._insert = Prepared(gate.insert(threads).on_conflict_do_nothing())
        self._insert_session = Prepared(gate.insert(sessions).on_conflict_do_nothing())

    async def get(self, key: ThreadKey) -> ThreadRecord | None:
        return await self._gate.read(partial(get_in, key=key))

    async def get_by_session(self, session_id: str) -> ThreadRecord | None:
        """The thread that currently maps to `session_id`, if any."""

        async def tx(conn: AsyncConnection) -> ThreadRecord | None:
            query = sa.select(threads).where(threads.c.session_id == session_id).limit(1)
            row = (await conn.execute(query)).first()
            return None if row is None else _record(row)

        return await self._gate.read(tx)

    async def create(
        self,
        key: ThreadKey,
        *,
        session_id: str,
        app_name: str,
        user_id: str,
        owner_agent: str | None = None,
        source_session_id: str | None = None,
        empty_session: bool = False,
        now: float,
    ) -> ThreadRecord:
        """Map a new thread; if another writer mapped it first, return that row.
        `empty_session` also creates the new thread's session, empty, in the same
        transaction (a new conversation's first write is then one transaction, not two)."""

        async def tx(conn: AsyncConnection) -> ThreadRecord:
            inserted = await self._insert.rowcount(
                conn,
                {
                    "team_id": key.team_id,
                    "channel_id": key.channel_id,
                    "thread_ts": key.thread_ts,
                    "session_id": session_id,
                    "app_name": app_name,
                    "user_id": user_id,
                    "owner_agent": owner_agent,
                    "source_session_id": source_session_id,
                    "last_activity_at": now,
                    "created_at": now,
                },
            )
            if inserted and empty_session:
                await self._insert_session.rowcount(
                    conn,
                    {
                        "app_name": app_name,
                        "user_id": user_id,
                        "session_id": session_id,
                        "state": {},
                        "created_at": now,
                        "updated_at": now,
                    },
                )
            (found,) = await _SELECT.mappings(conn, _key_params(key))
            return ThreadRecord.model_validate(found)

        return await self._gate.write(tx)

    async def _update(self, key: ThreadKey, values: dict[str, Any], *guards: Any) -> bool:
        async def tx(conn: AsyncConnection) -> bool:
            if not guards:
                params = {**_key_params(key), **values}
                return bool(await _UPDATE.rows(conn, params))
            stmt = (
                sa.update(threads)
                .where(_key_where(key), *guards)
                .values(values)
                .returning(threads.c.thread_ts)
            )
            return (await conn.execute(stmt)).first() is not None

        return await self._gate.write(tx)

    async def remap(
        self,
        key: ThreadKey,
        *,
        session_id: str,
        owner_agent: str | None,
        source_session_id: str | None,
    ) -> bool:
        """Point the thread at another session. Digest progress restarts, since event
        seqs are per session. False when the thread is unknown."""
        return await self._update(
            key,
            {
                "session_id": session_id,
                "owner_agent": owner_agent,
                "source_session_id": source_session_id,
                "last_digested_seq": 0,
                "digest_state": "pending",
            },
        )

    async def touch(self, key: ThreadKey, *, now: float, owner_agent: str | None = None) -> bool:
        """Record activity at `now` (and the owning agent, when given)."""

        async def tx(conn: AsyncConnection) -> bool:
            return await touch_in(conn, key, now=now, owner_agent=owner_agent)

        return await self._gate.write(tx)

    async def set_status(self, key: ThreadKey, status: ThreadStatus) -> bool:
        return await self._update(key, {"status": status})

    async def flag(self, key: ThreadKey, reason: str) -> bool:
        """Mark the thread as needing a person's attention, with the reason."""
        return await self._update(key, {"needs_attention": True, "attention_reason": reason})

    async def clear_flag(self, key: ThreadKey) -> bool:
        return await self._update(key, {"needs_attention": False, "attention_reason": None})

    async def find_idle(
        self, *, now: float, idle_after: float, limit: int, dead_after: float | None = None
    ) -> list[ThreadRecord]:
        """Threads the bot has answered, with no activity for `idle_after` seconds, events
        newer than their last digest, and no live lease (see `lease_free`); least recently
        active first."""
        query = find_idle_query(now=now, idle_after=idle_after, limit=limit, dead_after=dead_after)

        async def tx(conn: AsyncConnection) -> list[ThreadRecord]:
            return _records(await conn.execute(query))

        return await self._gate.read(tx)

    async def claim(
        self,
        key: ThreadKey,
        *,
        owner: str,
        now: float,
        lease_seconds: float,
        dead_after: float | None = None,
    ) -> bool:
        """Take the thread's lease if it is free (`lease_free`: none, expired, or held by
        an owner that stopped beating) and the thread still has undigested events. One
        guarded UPDATE, so of several concurrent claimers exactly one gets True, and a
        claimer that found the thread before another process digested it gets False."""
        session_last_seq = (
            sa.select(sessions.c.last_seq).where(_SESSION_OF_THREAD).scalar_subquery()
        )
        return await self._update(
            key,
            {"lease_owner": owner, "lease_expires_at": now + lease_seconds},
            lease_free(now=now, dead_after=dead_after),
            threads.c.digest_state == "pending",
            sa.func.coalesce(session_last_seq, 0) > threads.c.last_digested_seq,
        )

    async def renew(self, key: ThreadKey, *, owner: str, now: float, lease_seconds: float) -> bool:
        """Extend `owner`'s lease to `now + lease_seconds`; False when `owner` no longer
        holds it (a peer took it over), and the holder must then stop."""
        return await self._update(
            key, {"lease_expires_at": now + lease_seconds}, threads.c.lease_owner == owner
        )

    async def release(
        self,
        key: ThreadKey,
        *,
        owner: str,
        digested_seq: int | None = None,
        digest_id: int | None = None,
    ) -> bool:
        """Drop `owner`'s lease, recording digest progress when given. The thread stays
        pending if its session gained events beyond `digested_seq` meanwhile. False when
        `owner` did not hold the lease."""
        values: dict[str, Any] = {"lease_owner": None, "lease_expires_at": None}
        if digested_seq is not None:
            session_last_seq = (
                sa.select(sessions.c.last_seq).where(_SESSION_OF_THREAD).scalar_subquery()
            )
            values["last_digested_seq"] = digested_seq
            values["digest_state"] = sa.case(
                (sa.func.coalesce(session_last_seq, 0) > digested_seq, "pending"),
                else_="digested",
            )
        if digest_id is not None:
            values["last_digest_id"] = digest_id
        return await self._update(key, values, threads.c.lease_owner == owner)

    async def for_user(
        self, *, team_id: str, channel_id: str, user_id: str, limit: int
    ) -> list[ThreadRecord]:
        """`user_id`'s threads in one channel, most recently active first."""
        query = (
            sa.select(threads)
            .where(
                threads.c.team_id == team_id,
                threads.c.channel_id == channel_id,
                threads.c.user_id == user_id,
            )
            .order_by(threads.c.last_activity_at.desc())
            .limit(limit)
        )

        async def tx(conn: AsyncConnection) -> list[ThreadRecord]:
            return _records(await conn.execute(query))

        return await self._gate.read(tx)

    async def list_threads(self, limit: int = 100) -> list[ThreadRecord]:
        """Most recently active threads first."""
        query = sa.select(threads).order_by(threads.c.last_activity_at.desc()).limit(limit)

        async def tx(conn: AsyncConnection) -> list[ThreadRecord]:
            return _records(await conn.execute(query))

        return await self._gate.read(tx)
