"""Accepted Slack messages that are not answered yet, so a crash loses none of them.

A message is `accept`ed (together with its delivery key, in one transaction, batched
with others: `storage.delivery.accepting`) before the HTTP ack, marked `start`ed with
its invocation id as the user's event is appended (in the transaction that appends it,
`start_in_append`, with the placeholder or streamed message its reply goes into), and
`finish`ed (deleted) once the reply or a failure notice is in the thread. Rows carry
the owning process, and every update is guarded by it: a process whose row was taken
over changes nothing. A live process `take_over`s the rows of an owner that stopped
beating (`storage.delivery.owners`) and finishes them.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.delivery.accepting import AcceptBatcher, PendingAccept, Placed, Placement
from storage.delivery.owners import owner_is_dead
from storage.engine import SqlGate
from storage.errors import StorageError
from storage.prepared import Prepared
from storage.schema import inflight
from storage.sessions import Write, session_exists_in
from storage.threads import ThreadKey, ThreadRecord, get_in, touch_in

Stage = Literal["accepted", "started"]


class InflightKey(BaseModel):
    """One Slack message: `(team_id, channel_id, message_ts)`."""

    model_config = ConfigDict(frozen=True)

    team_id: str
    channel_id: str
    message_ts: str


class InflightRecord(BaseModel):
    """One accepted, unanswered message. `message` is the caller's own description of it."""

    team_id: str
    channel_id: str
    message_ts: str
    thread_ts: str
    message: dict[str, Any]
    stage: Stage
    invocation_id: str | None = None
    placeholder_ts: str | None = None
    stream_ts: str | None = None
    owner: str
    accepted_at: float
    started_at: float | None = None

    @property
    def key(self) -> InflightKey:
        return InflightKey(
            team_id=self.team_id, channel_id=self.channel_id, message_ts=self.message_ts
        )


def _where(key: InflightKey) -> sa.ColumnElement[bool]:
    return sa.and_(
        inflight.c.team_id == key.team_id,
        inflight.c.channel_id == key.channel_id,
        inflight.c.message_ts == key.message_ts,
    )


# Built once and reused (see `storage.sessions`); an UPDATE sets the columns named by the
# parameters it is executed with. A process only changes the rows it owns.
_OWNED = sa.and_(
    inflight.c.team_id == sa.bindparam("b_team"),
    inflight.c.channel_id == sa.bindparam("b_channel"),
    inflight.c.message_ts == sa.bindparam("b_ts"),
    inflight.c.owner == sa.bindparam("b_owner"),
)
_UPDATE_OWNED = Prepared(sa.update(inflight).where(_OWNED).returning(inflight.c.message_ts))
_DELETE_OWNED = Prepared(sa.delete(inflight).where(_OWNED))


_EARLIER_BY_OTHERS = Prepared(
    sa.select(
        sa.exists().where(
            inflight.c.owner != sa.bindparam("b_owner"),
            inflight.c.team_id == sa.bindparam("b_team"),
            inflight.c.channel_id == sa.bindparam("b_channel"),
            inflight.c.thread_ts == sa.bindparam("b_thread"),
            inflight.c.message_ts < sa.bindparam("b_ts"),
        )
    )
)


def _owned_params(key: InflightKey, owner: str) -> dict[str, Any]:
    return {
        "b_team": key.team_id,
        "b_channel": key.channel_id,
        "b_ts": key.message_ts,
        "b_owner": owner,
    }


def _started(
    invocation_id: str, now: float, stream_ts: str | None, placeholder_ts: str | None
) -> dict[str, Any]:
    values: dict[str, Any] = {"stage": "started", "invocation_id": invocation_id, "started_at": now}
    if stream_ts is not None:
        values["stream_ts"] = stream_ts
    if placeholder_ts is not None:
        values["placeholder_ts"] = placeholder_ts
    return values


class MessageTakenOverError(StorageError):
    """Another process took the message over (this one was thought dead): it answers."""


class ThreadCheck(NamedTuple):
    """What a message's turn reads before it decides (`earlier_and_thread`)."""

    earlier: bool
    thread: ThreadRecord | None
    has_session: bool


class InflightStore:
    """Durable tracking of accepted messages until their thread has an answer."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate
        self._accepts = AcceptBatcher(gate)

    async def accept(
        self,
        key: InflightKey,
        *,
        thread_ts: str,
        message: dict[str, Any],
        delivery_key: str,
        owner: str,
        now: float,
        keeps_dm_conversation: bool = False,
        placement: tuple[Placement, Placed] | None = None,
    ) -> bool:
        """Record the delivery and the message at once; False (nothing written) when the
        delivery key was seen before, by any process. With `keeps_dm_conversation` (a
        DM message in a thread) the same transaction keeps the DM's conversation rooted
        at `thread_ts` active (`storage.dm_conversations`), rather than one more write
        on the ack path. A `placement` (the write, and what turns the thread it chose
        into the row's `thread_ts` and `message`) runs in it too, for a new delivery
        only: a top-level DM message is placed in its conversation as it is accepted, in
        the order the batch's messages arrived.

        Accepts sit on the ack path, so concurrent ones are group-committed
        (`storage.delivery.accepting`): every accept that arrives while a batch is being
        written goes into the next single transaction, instead of each waiting its turn
        for SQLite's one writer.
        """
        pending = PendingAccept(
            {"key": delivery_key, "created_at": now},
            {
                **key.model_dump(),
                "thread_ts": thread_ts,
                "message": message,
                "stage": "accepted",
                "owner": owner,
                "accepted_at": now,
            },
            keeps_dm_conversation,
            placement,
        )
        return await self._accepts.accept(pending)

    async def _update(self, key: InflightKey, values: dict[str, Any], *guards: Any) -> bool:
        async def tx(conn: AsyncConnection) -> bool:
            stmt = (
                sa.update(inflight)
                .where(_where(key), *guards)
                .values(values)
                .returning(inflight.c.message_ts)
            )
            return (await conn.execute(stmt)).first() is not None

        return await self._gate.write(tx)

    async def _update_owned(self, key: InflightKey, owner: str, values: dict[str, Any]) -> bool:
        async def tx(conn: AsyncConnection) -> bool:
            params = {**_owned_params(key, owner), **values}
            return bool(await _UPDATE_OWNED.rows(conn, params))

        return await self._gate.write(tx)

    async def start(
        self,
        key: InflightKey,
        *,
        owner: str,
        invocation_id: str,
        now: float,
        stream_ts: str | None = None,
        placeholder_ts: str | None = None,
    ) -> bool:
        """The invocation is about to append the user's event: from here on a crash means
        the thread is told, not that the message is run again. False when `owner` no
        longer holds the row. The streamed message (or placeholder) the reply goes
        into, when there already is one, is recorded in the same write."""
        values = _started(invocation_id, now, stream_ts, placeholder_ts)
        return await self._update_owned(key, owner, values)

    def start_in_append(
        self,
        key: InflightKey,
        *,
        owner: str,
        invocation_id: str,
        now: float,
        stream_ts: str | None = None,
        placeholder_ts: str | None = None,
    ) -> Write:
        """`start` as a write for the transaction that appends the user's event (the
        runner's `with_user_event`, which `SqlSessionService.append_event` runs): the
        message is started exactly when its event is stored, one commit instead of two.
        Raises `MessageTakenOverError`, so the append is rolled back, when `owner` no
        longer holds the row."""
        params = {
            **_owned_params(key, owner),
            **_started(invocation_id, now, stream_ts, placeholder_ts),
        }

        async def write(conn: AsyncConnection) -> None:
            if not await _UPDATE_OWNED.rows(conn, params):
                raise MessageTakenOverError(f"message {key.message_ts} was taken over")

        return write

    async def set_stream(self, key: InflightKey, *, owner: str, stream_ts: str) -> bool:
        """Record the streamed message the reply goes into, once it is started (with the
        reply's first content): a crash from here on finishes the reply in it. False
        when `owner` no longer holds the row."""
        return await self._update_owned(key, owner, {"stream_ts": stream_ts})

    async def finish(self, key: InflightKey, *, owner: str) -> bool:
        """The thread has its answer (or the message needs none): forget the message,
        if `owner` still holds it."""

        async def tx(conn: AsyncConnection) -> bool:
            return await _DELETE_OWNED.rowcount(conn, _owned_params(key, owner)) > 0

        return await self._gate.write(tx)

    async def finish_answered(
        self,
        key: InflightKey,
        thread: ThreadKey,
        *,
        owner: str,
        now: float,
        owner_agent: str,
        also: Write | None = None,
    ) -> bool:
        """`finish` the message and `ThreadStore.touch` its thread in one transaction,
        with `also` (another store's write: the reply's event completed with its Slack
        message, say) in it."""

        async def tx(conn: AsyncConnection) -> bool:
            params = _owned_params(key, owner)
            finished = await _DELETE_OWNED.rowcount(conn, params) > 0
            await touch_in(conn, thread, now=now, owner_agent=owner_agent)
            if also is not None:
                await also(conn)
            return finished

        return await self._gate.write(tx)

    async def left_by_others(
        self, owner: str, *, now: float, dead_after: float | None, limit: int = 1000
    ) -> list[InflightRecord]:
        """Rows of owners other than `owner` that stopped beating `dead_after` seconds
        ago (every other owner's when `dead_after` is None), oldest first."""
        query = sa.select(inflight).where(inflight.c.owner != owner)
        if dead_after is not None:
            query = query.where(owner_is_dead(inflight.c.owner, now=now, dead_after=dead_after))
        query = query.order_by(inflight.c.accepted_at).limit(limit)

        async def tx(conn: AsyncConnection) -> list[InflightRecord]:
            rows = (await conn.execute(query)).all()
            return [InflightRecord.model_validate(dict(r._mapping)) for r in rows]

        return await self._gate.read(tx)

    async def take_over(
        self, record: InflightRecord, *, owner: str, now: float, dead_after: float | None
    ) -> bool:
        """Move a row from its previous owner to `owner`. One guarded UPDATE, so of
        several processes recovering at once exactly one gets True, and an owner that
        beat within `dead_after` seconds keeps its row (None: take it regardless)."""
        guards = [inflight.c.owner == record.owner]
        if dead_after is not None:
            guards.append(owner_is_dead(inflight.c.owner, now=now, dead_after=dead_after))
        return await self._update(record.key, {"owner": owner}, *guards)

    async def earlier_and_thread(
        self, key: InflightKey, thread: ThreadKey, *, owner: str
    ) -> ThreadCheck:
        """In one read: whether an earlier message of the message's thread is still
        unanswered by a process other than `owner` (a later one waits for it, so replies
        keep the thread's order; `owner`'s own earlier messages are ordered by its thread
        worker already), the thread's record, and whether its session is stored."""
        params = {
            "b_owner": owner,
            "b_team": key.team_id,
            "b_channel": key.channel_id,
            "b_thread": thread.thread_ts,
            "b_ts": key.message_ts,
        }

        async def tx(conn: AsyncConnection) -> ThreadCheck:
            earlier = bool((await _EARLIER_BY_OTHERS.rows(conn, params))[0][0])
            record = await get_in(conn, thread)
            stored = record is not None and await session_exists_in(conn, record)
            return ThreadCheck(earlier=earlier, thread=record, has_session=stored)

        return await self._gate.read(tx)

    async def count(self) -> int:
        """How many messages are accepted and not yet answered, by every process."""

        async def tx(conn: AsyncConnection) -> int:
            query = sa.select(sa.func.count()).select_from(inflight)
            return int((await conn.execute(query)).scalar_one())

        return await self._gate.read(tx)
