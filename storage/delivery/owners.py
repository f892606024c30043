"""Process heartbeats: which bot processes sharing the database are alive.

Each process (`bot.wiring.process_owner`) `beat`s every few seconds. An owner is *dead*
when it has no row or its last beat is older than `dead_after` seconds; only then may a
peer take over its in-flight messages (`storage.delivery.inflight`) and digest leases
(`storage.threads`). `owner_is_dead` is the SQL condition those guarded UPDATEs share, so
the check and the takeover are one statement and a live owner's work is never taken.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.schema import owners


def owner_is_dead(
    column: sa.ColumnElement[str], *, now: float, dead_after: float
) -> sa.ColumnElement[bool]:
    """True where `column` names an owner with no heartbeat in the last `dead_after` s."""
    live = sa.exists().where(owners.c.owner == column, owners.c.beat_at > now - dead_after)
    return ~live


class OwnerStore:
    """Heartbeats of the bot processes sharing this database."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate

    async def beat(self, owner: str, *, now: float) -> None:
        """Record that `owner` is alive at `now`."""
        stmt = self._gate.insert(owners).values(owner=owner, started_at=now, beat_at=now)
        stmt = stmt.on_conflict_do_update(index_elements=[owners.c.owner], set_={"beat_at": now})

        async def tx(conn: AsyncConnection) -> None:
            await conn.execute(stmt)

        await self._gate.write(tx, urgent=True)

    async def stop(self, owner: str) -> None:
        """A clean shutdown: `owner` holds nothing any more, forget it."""

        async def tx(conn: AsyncConnection) -> None:
            await conn.execute(sa.delete(owners).where(owners.c.owner == owner))

        await self._gate.write(tx)

    async def purge(self, *, before: float) -> int:
        """Forget owners whose last beat is older than `before`; how many were removed."""

        async def tx(conn: AsyncConnection) -> int:
            return (await conn.execute(sa.delete(owners).where(owners.c.beat_at < before))).rowcount

        return await self._gate.write(tx)
