"""Summary deliveries: one row per summary a consumer received (a digest, a `/summary`
answer, a hand-off), for fallback and partial rates per surface."""

from __future__ import annotations

import time
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.schema import summary_deliveries


class SummaryDelivery(Protocol):
    """What `SummaryDeliveryStore.add` reads (`agents.summary.metrics.SummaryDelivery`)."""

    @property
    def session_id(self) -> str: ...

    @property
    def surface(self) -> str: ...

    @property
    def outcome(self) -> str: ...

    @property
    def windows(self) -> int: ...

    @property
    def gaps(self) -> int: ...


class SummaryDeliveryStore:
    """Records summary deliveries and counts them per surface and outcome."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate

    async def add(self, delivery: SummaryDelivery, *, created_at: float | None = None) -> int:
        """Store one delivery; returns its id."""
        values = {
            "session_id": delivery.session_id,
            "surface": delivery.surface,
            "outcome": delivery.outcome,
            "windows": int(delivery.windows),
            "gaps": int(delivery.gaps),
            "created_at": time.time() if created_at is None else created_at,
        }

        async def tx(conn: AsyncConnection) -> int:
            result = await conn.execute(
                sa.insert(summary_deliveries).values(values).returning(summary_deliveries.c.id)
            )
            return int(result.scalar_one())

        return await self._gate.write(tx)

    async def counts(self) -> dict[str, dict[str, int]]:
        """Deliveries per surface, then per outcome."""
        query = sa.select(
            summary_deliveries.c.surface, summary_deliveries.c.outcome, sa.func.count()
        ).group_by(summary_deliveries.c.surface, summary_deliveries.c.outcome)

        async def tx(conn: AsyncConnection) -> dict[str, dict[str, int]]:
            counts: dict[str, dict[str, int]] = {}
            for surface, outcome, n in await conn.execute(query):
                counts.setdefault(str(surface), {})[str(outcome)] = int(n)
            return counts

        return await self._gate.read(tx)
