"""Which conversation a DM's top-level message joins, on each SQL backend: the current one
while it is active, a new one after the idle limit or `end`; concurrent first messages
(several processes) agree on one conversation; a reply under a folded top-level message
finds the conversation it was folded into."""

from __future__ import annotations

import asyncio
from typing import Any

from storage import Database
from tests.fixtures.transactions import count_transactions

IDLE = 60.0


async def test_top_level_messages_continue_until_idle_or_ended(db: Database) -> None:
    place = db.dm_conversations.place
    assert await place("T1", "D1", "100.1", now=1000.0, idle_after=IDLE) == "100.1"
    assert await place("T1", "D1", "150.1", now=1050.0, idle_after=IDLE) == "100.1"
    # A reply in the conversation's thread keeps it active; one elsewhere does not.
    await db.dm_conversations.touch("T1", "D1", "100.1", now=1100.0)
    await db.dm_conversations.touch("T1", "D1", "999.1", now=1200.0)
    assert await place("T1", "D1", "200.1", now=1150.0, idle_after=IDLE) == "100.1"
    # Quiet for longer than the limit: a new conversation, rooted at the new message.
    assert await place("T1", "D1", "300.1", now=1300.0, idle_after=IDLE) == "300.1"
    assert await place("T1", "D2", "301.1", now=1300.0, idle_after=IDLE) == "301.1"
    assert await db.dm_conversations.end("T1", "D1")
    assert not await db.dm_conversations.end("T1", "D1")
    assert await place("T1", "D1", "310.1", now=1310.0, idle_after=IDLE) == "310.1"
    assert await place("T1", "D2", "311.1", now=1310.0, idle_after=IDLE) == "301.1"


async def test_concurrent_first_messages_from_two_processes_join_one_conversation(
    db_url: str,
) -> None:
    first, second = await Database.open(db_url), await Database.open(db_url)
    try:
        roots = await asyncio.gather(
            *(
                peer.dm_conversations.place("T1", "D1", f"{n}.1", now=1000.0, idle_after=IDLE)
                for n in range(10)
                for peer in (first, second)
            )
        )
    finally:
        await first.close()
        await second.close()
    assert len(set(roots)) == 1


async def test_a_reply_under_a_folded_message_finds_its_conversation(db: Database) -> None:
    place, root_of = db.dm_conversations.place, db.dm_conversations.folded_root
    assert await place("T1", "D1", "100.1", now=1000.0, idle_after=IDLE) == "100.1"
    assert await place("T1", "D1", "150.1", now=1010.0, idle_after=IDLE) == "100.1"
    # Under the folded message: its conversation; under the root: none to look up.
    assert await root_of("T1", "D1", "150.1") == "100.1"
    assert await root_of("T1", "D1", "100.1") is None
    # A conversation that is no longer current still claims its folded messages.
    assert await db.dm_conversations.end("T1", "D1")
    assert await place("T1", "D1", "200.1", now=1130.0, idle_after=IDLE) == "200.1"
    assert await root_of("T1", "D1", "150.1") == "100.1"
    # The same ts in another DM is not folded.
    assert await root_of("T1", "D2", "150.1") is None


async def test_a_top_level_message_is_placed_in_the_transaction_that_accepts_it(
    db: Database,
) -> None:
    """`InflightStore.accept` with a placement: one write transaction on the ack path,
    messages accepted together placed in the order they arrived, and a redelivery
    placing nothing (the conversation's activity stays as the first delivery left it)."""
    from storage.delivery.inflight import InflightKey

    def accept(ts: str, now: float) -> Any:
        placement = db.dm_conversations.placement("T1", "D1", ts, now=now, idle_after=IDLE)

        def placed(root: str) -> tuple[str, dict[str, Any]]:
            return root, {"ts": ts, "conversation_ts": root}

        async def run() -> str | None:
            accepted = await db.inflight.accept(
                InflightKey(team_id="T1", channel_id="D1", message_ts=ts),
                thread_ts=ts,
                message={"ts": ts},
                delivery_key=f"message:T1:D1:{ts}",
                owner="proc-1",
                now=now,
                placement=(placement, placed),
            )
            return db.dm_conversations.placed(placement) if accepted else None

        return run()

    seen = count_transactions(db)
    # Accepted together (one batch): the first roots the conversation, the rest join it.
    roots = await asyncio.gather(*(accept(f"10{n}.1", 1000.0 + n) for n in range(3)))
    assert roots == ["100.1", "100.1", "100.1"]
    # One transaction per accept at most (a batch takes several), none for the placements.
    assert 1 <= seen["write"] <= 3
    rows = await db.inflight.left_by_others("nobody", now=2000.0, dead_after=None)
    assert {(r.message_ts, r.thread_ts, r.message["conversation_ts"]) for r in rows} == {
        (f"10{n}.1", "100.1", "100.1") for n in range(3)
    }
    # The folded ones are known for the replies under them, without a read.
    assert await db.dm_conversations.folded_root("T1", "D1", "102.1") == "100.1"
    # A redelivery much later is refused before anything is placed: had it placed, it
    # would have kept the conversation active at 1,500 s, and the next message joined it.
    assert await accept("101.1", 1500.0) is None
    place = db.dm_conversations.place
    assert await place("T1", "D1", "200.1", now=1550.0, idle_after=IDLE) == "200.1"
