"""Per-user request counts kept in the database: the truth for a user's rate when several
bot processes share one database.

Each user has one row: the start of their current window, how many requests it counted,
and whether they were told they are over the limit. A request past the window's end
starts a new window. Counting is one upsert, so two processes taking at once both count;
telling is a conditional update, so exactly one of them tells.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.schema import user_rates


@dataclass(frozen=True)
class RateTaken:
    """One counted request: its number in the user's window, when that window ends, and
    whether this request is the one that should tell the user they are over the limit."""

    count: int
    window_end: float
    tell: bool


class RateStore:
    """Counts a user's requests per window, across every process on the database."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate

    async def take(self, user_id: str, *, now: float, window: float, limit: int) -> RateTaken:
        """Count one request of `user_id` at `now` in a window of `window` seconds; past
        `limit` in the window, the first such request (in any process) gets `tell`."""

        async def tx(conn: AsyncConnection) -> RateTaken:
            expired = user_rates.c.window_start <= now - window
            insert = self._gate.insert(user_rates).values(
                user_id=user_id, window_start=now, count=1, told=False
            )
            counted = await conn.execute(
                insert.on_conflict_do_update(
                    index_elements=[user_rates.c.user_id],
                    set_={
                        "count": sa.case((expired, 1), else_=user_rates.c.count + 1),
                        "told": sa.case((expired, sa.false()), else_=user_rates.c.told),
                        "window_start": sa.case((expired, now), else_=user_rates.c.window_start),
                    },
                ).returning(user_rates.c.count, user_rates.c.window_start)
            )
            count, start = counted.one()
            tell = False
            if count > limit:
                told = await conn.execute(
                    sa.update(user_rates)
                    .where(user_rates.c.user_id == user_id, user_rates.c.told.is_(False))
                    .values(told=True)
                )
                tell = bool(told.rowcount)
            return RateTaken(count=int(count), window_end=float(start) + window, tell=tell)

        return await self._gate.write(tx, urgent=True)
