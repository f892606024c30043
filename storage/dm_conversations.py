"""The conversation a direct message's top-level messages continue.

In a DM, Slack users mostly type at the bottom of the conversation rather than in a
thread. A top-level DM message therefore continues the DM's current conversation (one
thread, one session, one digest) unless that conversation has been quiet for longer
than the idle limit, or the user ended it (`/new`); then the message starts a new one,
as its root. Messages in a Slack thread always belong to that thread.

One row per DM holds the current conversation's root and its last activity. Choosing
the conversation is one INSERT ... ON CONFLICT UPDATE, so two top-level messages that
arrive at once at different processes still agree on it. A top-level message folded
into a conversation it does not root is recorded (`dm_folded`), in the same
transaction, so that a reply in the Slack thread under it joins that conversation.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.schema import dm_conversations, dm_folded


class DmConversationStore:
    """Which conversation a DM's next top-level message belongs to."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate

    async def place(
        self, team_id: str, channel_id: str, message_ts: str, *, now: float, idle_after: float
    ) -> str:
        """The root ts of the conversation the top-level message `message_ts` belongs to:
        the current one if it had a message within `idle_after` seconds, else a new one
        rooted at `message_ts`. Either way the conversation's activity is now."""
        current = dm_conversations.c
        stmt = self._gate.insert(dm_conversations).values(
            team_id=team_id, channel_id=channel_id, root_ts=message_ts, last_at=now
        )
        stale = current.last_at < now - idle_after
        stmt = stmt.on_conflict_do_update(
            index_elements=[current.team_id, current.channel_id],
            set_={
                "root_ts": sa.case((stale, stmt.excluded.root_ts), else_=current.root_ts),
                "last_at": stmt.excluded.last_at,
            },
        ).returning(current.root_ts)

        async def tx(conn: AsyncConnection) -> str:
            root = str((await conn.execute(stmt)).scalar_one())
            if root != message_ts:
                folded = self._gate.insert(dm_folded).values(
                    team_id=team_id, channel_id=channel_id, message_ts=message_ts, root_ts=root
                )
                await conn.execute(folded.on_conflict_do_nothing())
            return root

        return await self._gate.write(tx)

    async def thread_root(
        self, team_id: str, channel_id: str, thread_ts: str, *, now: float
    ) -> str:
        """The root of the conversation a message in the Slack thread `thread_ts`
        belongs to: the conversation `thread_ts` was folded into, else the thread itself.
        If that is the DM's current conversation, it is active now (replying keeps it
        going)."""
        folded = sa.select(dm_folded.c.root_ts).where(
            dm_folded.c.team_id == team_id,
            dm_folded.c.channel_id == channel_id,
            dm_folded.c.message_ts == thread_ts,
        )
        current = dm_conversations.c

        async def tx(conn: AsyncConnection) -> str:
            root = (await conn.execute(folded)).scalar() or thread_ts
            touch = (
                sa.update(dm_conversations)
                .where(
                    current.team_id == team_id,
                    current.channel_id == channel_id,
                    current.root_ts == root,
                    current.last_at < now,
                )
                .values(last_at=now)
            )
            await conn.execute(touch)
            return str(root)

        return await self._gate.write(tx)

    async def end(self, team_id: str, channel_id: str) -> bool:
        """End the DM's current conversation: its next top-level message starts a new one.
        False when there was none."""
        current = dm_conversations.c
        stmt = sa.delete(dm_conversations).where(
            current.team_id == team_id, current.channel_id == channel_id
        )

        async def tx(conn: AsyncConnection) -> bool:
            return bool((await conn.execute(stmt)).rowcount)

        return await self._gate.write(tx)
