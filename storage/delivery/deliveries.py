"""Processed Slack deliveries: each key (an `event_id`, or a retry key for commands and
shortcuts) is accepted once across all bot processes, by a unique insert."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.schema import deliveries


class DeliveryStore:
    """Exactly-once acceptance of Slack deliveries."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate

    async def first_delivery(self, key: str, *, now: float) -> bool:
        """True the first time `key` is seen, False for every later delivery of it."""

        async def tx(conn: AsyncConnection) -> bool:
            inserted = await conn.execute(
                self._gate.insert(deliveries)
                .values(key=key, created_at=now)
                .on_conflict_do_nothing()
                .returning(deliveries.c.key)
            )
            return inserted.first() is not None

        return await self._gate.write(tx, urgent=True)

    async def purge(self, older_than: float) -> int:
        """Forget deliveries recorded before `older_than` (epoch seconds); returns how many.
        Slack stops retrying after minutes, so an hour of rows is plenty."""

        async def tx(conn: AsyncConnection) -> int:
            result = await conn.execute(
                sa.delete(deliveries).where(deliveries.c.created_at < older_than)
            )
            return result.rowcount

        return await self._gate.write(tx)
