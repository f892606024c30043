"""Accepting a Slack message before the HTTP ack: its delivery key and its in-flight row
in one transaction, group-committed with every other accept that arrives meanwhile.

`InflightStore.accept` (`storage.delivery.inflight`) hands each accept to an
`AcceptBatcher`; the rest of a row's life (started, finished, taken over) is that
module's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from storage.dm_conversations import touch_in as touch_dm_conversation_in
from storage.engine import SqlGate
from storage.prepared import Prepared
from storage.schema import deliveries, inflight

# A write run in the transaction that accepts a message, once its delivery is found new,
# that decides the thread it belongs to (a top-level DM's conversation,
# `storage.dm_conversations.DmPlacement`); and, from that thread's ts, the `thread_ts`
# and `message` its row is written with.
Placement = Callable[[AsyncConnection], Awaitable[str]]
Placed = Callable[[str], tuple[str, dict[str, Any]]]

_MAX_BATCH = 200  # rows per multi-row INSERT, well under SQLite's variable limit


class PendingAccept:
    """One accept waiting for the next batch: the delivery and in-flight rows to insert,
    and the future its caller awaits (True: new; False: a duplicate delivery)."""

    __slots__ = ("delivery", "future", "keeps_dm_conversation", "placement", "row")

    def __init__(
        self,
        delivery: dict[str, Any],
        row: dict[str, Any],
        keeps_dm_conversation: bool,
        placement: tuple[Placement, Placed] | None,
    ) -> None:
        self.delivery = delivery
        self.row = row
        self.keeps_dm_conversation = keeps_dm_conversation
        self.placement = placement
        self.future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()


class AcceptBatcher:
    """Writes accepts in batches: every accept that arrives while a batch is being
    written goes into the next single transaction (see `accept`)."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate
        self._insert_delivery = Prepared(
            gate.insert(deliveries).on_conflict_do_nothing().returning(deliveries.c.key)
        )
        self._insert_row = Prepared(gate.insert(inflight).on_conflict_do_nothing())
        self._queue: list[PendingAccept] = []
        self._flushing = False
        self._flusher: asyncio.Task[None] | None = None

    async def accept(self, pending: PendingAccept) -> bool:
        """Write `pending` with the batch it joins; True when its delivery was new.

        On SQLite the accept that finds no batch being written writes it in its own task:
        the write does not yield to the event loop (`storage.sqlite_inline`), so the ack
        waits for no loop turn to start a flusher task and none to be woken by it. Such a
        write yields only before it commits (the first connection's open, another writer
        or process holding the lock, a retry's backoff); an accept cancelled there puts
        the unwritten batch back and hands the rest to a flusher task. PostgreSQL's write
        is network round trips, a commit among them, so it always runs in the flusher
        task, which a cancelled request cannot interrupt.
        """
        self._queue.append(pending)
        if not self._flushing:
            if self._gate.is_sqlite:
                try:
                    await self._flush(until=pending)
                finally:
                    self._hand_on()  # what queued meanwhile, or what a cancellation left
            else:
                self._hand_on()
        return await asyncio.shield(pending.future)

    def _hand_on(self) -> None:
        """Write whatever is queued in a flusher task of its own."""
        if self._queue and not self._flushing:
            self._flushing = True
            self._flusher = asyncio.create_task(self._flush())

    async def _flush(self, *, until: PendingAccept | None = None) -> None:
        """Write the queue batch by batch (only until `until` is written, when given)."""
        self._flushing = True
        try:
            while self._queue and (until is None or not until.future.done()):
                batch, self._queue = self._queue[:_MAX_BATCH], self._queue[_MAX_BATCH:]
                try:
                    accepted = await self._gate.write(
                        partial(self._write_batch, batch), urgent=True
                    )
                except Exception as exc:
                    for pending in batch:
                        pending.future.set_exception(exc)
                    continue
                except BaseException:
                    # Cancelled, which on SQLite can only land before the commit (nothing
                    # after it yields; see `accept`): not written, so first in line again.
                    self._queue[:0] = batch
                    raise
                for pending in batch:
                    pending.future.set_result(pending in accepted)
        finally:
            self._flushing = False

    async def _write_batch(
        self, batch: list[PendingAccept], conn: AsyncConnection
    ) -> set[PendingAccept]:
        first: dict[str, PendingAccept] = {}
        for pending in batch:
            first.setdefault(pending.delivery["key"], pending)  # a repeat in one batch loses
        if self._gate.is_sqlite:
            # Row by row on the inline connection: each INSERT takes microseconds, while
            # one multi-row INSERT through SQLAlchemy cost more than the rest of the
            # batch's transaction (a greenlet, an execution context, its own commit).
            # In the order the batch arrived: placements depend on it.
            winners = [
                p for p in first.values() if await self._insert_delivery.rows(conn, p.delivery)
            ]
            for p in winners:
                await _placed(conn, p)
                await self._insert_row.rowcount(conn, p.row)
        else:
            # Executed with a list of rows, one statement object serves every batch
            # size (multi-row INSERTs, one round trip), instead of compiling per size.
            inserted = await conn.execute(
                self._insert_delivery.statement, [p.delivery for p in first.values()]
            )
            new = {key for (key,) in inserted}
            winners = [p for key, p in first.items() if key in new]
            for p in winners:
                await _placed(conn, p)
            if winners:
                await conn.execute(self._insert_row.statement, [p.row for p in winners])
        for p in winners:
            if p.keeps_dm_conversation:
                row = p.row
                await touch_dm_conversation_in(
                    conn,
                    row["team_id"],
                    row["channel_id"],
                    row["thread_ts"],
                    now=row["accepted_at"],
                )
        return set(winners)


async def _placed(conn: AsyncConnection, pending: PendingAccept) -> None:
    """Run the accept's placement, then write its row in the thread it chose."""
    if pending.placement is not None:
        placement, placed = pending.placement
        thread_ts, message = placed(await placement(conn))
        pending.row = {**pending.row, "thread_ts": thread_ts, "message": message}
