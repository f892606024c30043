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
transaction, so that a reply in the Slack thread under it joins that conversation. A
message Slack delivers is placed inside the transaction that accepts it
(`DmConversationStore.placement`, run by `InflightStore.accept`), after its delivery is
found new: its ack waits for one write, and a redelivery places nothing.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.prepared import Prepared
from storage.schema import dm_conversations, dm_folded

# Built once: a follow-up in a DM thread runs it on the ack path (see `touch_in`).
_TOUCH = Prepared(
    sa.update(dm_conversations)
    .where(
        dm_conversations.c.team_id == sa.bindparam("b_team"),
        dm_conversations.c.channel_id == sa.bindparam("b_channel"),
        dm_conversations.c.root_ts == sa.bindparam("b_root"),
        dm_conversations.c.last_at < sa.bindparam("b_now"),
    )
    .values(last_at=sa.bindparam("b_now"))
)


async def touch_in(
    conn: AsyncConnection, team_id: str, channel_id: str, thread_ts: str, *, now: float
) -> None:
    """`DmConversationStore.touch` inside the caller's transaction (a delivery's
    acceptance writes it together with the message, `storage.delivery.inflight`)."""
    params = {"b_team": team_id, "b_channel": channel_id, "b_root": thread_ts, "b_now": now}
    await _TOUCH.rowcount(conn, params)


_FOLDED_ROOT = Prepared(
    sa.select(dm_folded.c.root_ts).where(
        dm_folded.c.team_id == sa.bindparam("b_team"),
        dm_folded.c.channel_id == sa.bindparam("b_channel"),
        dm_folded.c.message_ts == sa.bindparam("b_ts"),
    )
)

# Top-level messages whose conversation this process knows (a message's is fixed once it
# is placed), so that replies in their threads cost no read on the ack path.
_KNOWN_ROOTS = 10_000


@dataclasses.dataclass(slots=True, eq=False)
class DmPlacement:
    """The placement of one top-level DM message (`DmConversationStore.placement`): a
    write run inside a transaction, which returns the root it chose and keeps it in
    `root` (the last run's, when a contended transaction was retried)."""

    store: DmConversationStore = dataclasses.field(repr=False)
    team_id: str
    channel_id: str
    message_ts: str
    now: float
    idle_after: float
    root: str | None = None

    async def __call__(self, conn: AsyncConnection) -> str:
        self.root = await self.store._place_in(conn, self)
        return self.root


class DmConversationStore:
    """Which conversation a DM's next top-level message belongs to."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate
        # (team, channel, message ts) -> the root it was folded into, or None (a root).
        self._roots: OrderedDict[tuple[str, str, str], str | None] = OrderedDict()
        # Built once (statements are dialect-specific): a new conversation's placement
        # runs on the ack path.
        current = dm_conversations.c
        place = gate.insert(dm_conversations).values(
            team_id=sa.bindparam("b_team"),
            channel_id=sa.bindparam("b_channel"),
            root_ts=sa.bindparam("b_ts"),
            last_at=sa.bindparam("b_now"),
        )
        stale = current.last_at < sa.bindparam("b_stale_before")
        self._place = Prepared(
            place.on_conflict_do_update(
                index_elements=[current.team_id, current.channel_id],
                set_={
                    "root_ts": sa.case((stale, place.excluded.root_ts), else_=current.root_ts),
                    "last_at": place.excluded.last_at,
                },
            ).returning(current.root_ts)
        )
        self._fold = Prepared(
            gate.insert(dm_folded)
            .values(
                team_id=sa.bindparam("b_team"),
                channel_id=sa.bindparam("b_channel"),
                message_ts=sa.bindparam("b_ts"),
                root_ts=sa.bindparam("b_root"),
            )
            .on_conflict_do_nothing()
        )

    def _remember(self, key: tuple[str, str, str], root: str | None) -> None:
        self._roots[key] = root
        self._roots.move_to_end(key)
        while len(self._roots) > _KNOWN_ROOTS:
            self._roots.popitem(last=False)

    async def place(
        self, team_id: str, channel_id: str, message_ts: str, *, now: float, idle_after: float
    ) -> str:
        """The root ts of the conversation the top-level message `message_ts` belongs to:
        the current one if it had a message within `idle_after` seconds, else a new one
        rooted at `message_ts`. Either way the conversation's activity is now."""
        placement = self.placement(team_id, channel_id, message_ts, now=now, idle_after=idle_after)
        await self._gate.write(placement)
        return self.placed(placement)

    def placement(
        self, team_id: str, channel_id: str, message_ts: str, *, now: float, idle_after: float
    ) -> DmPlacement:
        """`place` as a write for another store's transaction: the acceptance of the
        message (`InflightStore.accept`), so the ack waits for one write, not two. Once
        that transaction has committed, `placed` gives the root."""
        return DmPlacement(self, team_id, channel_id, message_ts, now=now, idle_after=idle_after)

    def placed(self, placement: DmPlacement) -> str:
        """The root `placement` chose, now that its transaction committed (kept for the
        replies under the message: `folded_root`)."""
        root = placement.root
        assert root is not None, "the placement has not run"
        key = (placement.team_id, placement.channel_id, placement.message_ts)
        self._remember(key, None if root == placement.message_ts else root)
        return root

    async def _place_in(self, conn: AsyncConnection, placement: DmPlacement) -> str:
        params = {
            "b_team": placement.team_id,
            "b_channel": placement.channel_id,
            "b_ts": placement.message_ts,
            "b_now": placement.now,
            "b_stale_before": placement.now - placement.idle_after,
        }
        root = str((await self._place.rows(conn, params))[0][0])
        if root != placement.message_ts:
            fold = {
                "b_team": placement.team_id,
                "b_channel": placement.channel_id,
                "b_ts": placement.message_ts,
                "b_root": root,
            }
            await self._fold.rowcount(conn, fold)
        return root

    async def folded_root(self, team_id: str, channel_id: str, thread_ts: str) -> str | None:
        """The root of the conversation the top-level message `thread_ts` was folded
        into (a reply in the Slack thread under it belongs there), or None."""
        key = (team_id, channel_id, thread_ts)
        if key in self._roots:
            return self._roots[key]
        params = {"b_team": team_id, "b_channel": channel_id, "b_ts": thread_ts}

        async def tx(conn: AsyncConnection) -> str | None:
            rows = await _FOLDED_ROOT.rows(conn, params)
            return str(rows[0][0]) if rows else None

        found = await self._gate.read(tx)
        if found is not None:
            # A miss is not kept: the message may still be being placed by a peer.
            self._remember(key, found)
        return found

    async def touch(self, team_id: str, channel_id: str, thread_ts: str, *, now: float) -> None:
        """A message in the thread `thread_ts`: if that is the DM's current conversation,
        it is active now (replying in the thread keeps it going)."""

        async def tx(conn: AsyncConnection) -> None:
            await touch_in(conn, team_id, channel_id, thread_ts, now=now)

        await self._gate.write(tx)

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
