"""Feedback on AI replies: the thumbs up or down a person gave one reply.

One row per (session, reply event, person), holding the button they clicked last. Slack
may deliver a click twice, and several bot processes may each receive a copy: the
primary key makes the second copy find the first one's row, so it is never counted
twice. A person who changes their mind changes their row's value.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.schema import feedback

FeedbackValue = Literal["positive", "negative"]
VALUES: tuple[FeedbackValue, ...] = ("positive", "negative")
# What `record` did: a first click, a changed mind, or a copy of what is stored.
Recorded = Literal["new", "changed", "duplicate"]


@dataclass(frozen=True)
class FeedbackClick:
    """One click on a reply's feedback buttons, resolved to the reply's event."""

    team_id: str
    channel_id: str
    thread_ts: str
    session_id: str
    event_id: str
    agent: str
    user_id: str
    value: FeedbackValue


class FeedbackStore:
    """Stores feedback clicks once per person and reply, and counts a session's
    (totals per agent are `storage.stats`'s)."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate

    async def record(self, click: FeedbackClick, *, now: float) -> Recorded:
        """Store `click`: "new" for a person's first click on the reply, "changed" when
        it replaces their other button, "duplicate" when it is what is stored already."""

        async def tx(conn: AsyncConnection) -> Recorded:
            inserted = await conn.execute(
                self._gate.insert(feedback)
                .values(
                    **asdict(click),
                    created_at=now,
                    updated_at=now,
                )
                .on_conflict_do_nothing()
                .returning(feedback.c.event_id)
            )
            if inserted.first() is not None:
                return "new"
            changed = await conn.execute(
                sa.update(feedback)
                .where(
                    feedback.c.session_id == click.session_id,
                    feedback.c.event_id == click.event_id,
                    feedback.c.user_id == click.user_id,
                    feedback.c.value != click.value,
                )
                .values(value=click.value, updated_at=now)
            )
            return "changed" if changed.rowcount else "duplicate"

        return await self._gate.write(tx)

    async def for_session(self, session_id: str) -> dict[str, int]:
        """How many replies of the session people marked, per value."""

        async def tx(conn: AsyncConnection) -> dict[str, int]:
            query = (
                sa.select(feedback.c.value, sa.func.count(sa.distinct(feedback.c.event_id)))
                .where(feedback.c.session_id == session_id)
                .group_by(feedback.c.value)
            )
            return {value: int(n) for value, n in await conn.execute(query) if value in VALUES}

        return await self._gate.read(tx)
