"""The thread map: idempotent creation, idle-thread discovery and exclusive leases."""

from __future__ import annotations

import asyncio

from agents.events import Event
from storage import Database
from storage.threads import ThreadKey

NOW = 1_000_000.0
IDLE_AFTER = 1800.0


def _key(ts: str) -> ThreadKey:
    return ThreadKey(team_id="T1", channel_id="C1", thread_ts=ts)


async def _thread(
    db: Database, ts: str, *, events: int, last_activity_at: float, answered: bool = True
) -> ThreadKey:
    """A thread whose session holds `events` events and was last active then; `answered`
    when the bot has replied in it."""
    session = await db.sessions.create_session(app_name="app", user_id="u1", session_id=f"s{ts}")
    for _ in range(events):
        await db.sessions.append_event(session, Event(author="user"))
    await db.threads.create(
        _key(ts),
        session_id=session.id,
        app_name="app",
        user_id="u1",
        owner_agent="support" if answered else None,
        now=last_activity_at,
    )
    return _key(ts)


async def test_thread_create_is_idempotent(db: Database) -> None:
    first = await db.threads.create(
        _key("1.0"), session_id="s1", app_name="app", user_id="u1", owner_agent="support", now=5.0
    )
    again = await db.threads.create(
        _key("1.0"), session_id="other", app_name="app", user_id="u1", now=9.0
    )
    assert again == first
    assert (first.session_id, first.status, first.owner_agent) == ("s1", "active", "support")
    assert (first.created_at, first.last_activity_at, first.digest_state) == (5.0, 5.0, "pending")
    assert await db.threads.get(_key("1.0")) == first
    assert await db.threads.get_by_session("s1") == first
    assert await db.threads.get(_key("2.0")) is None


async def test_thread_updates_change_only_what_they_name(db: Database) -> None:
    key = await _thread(db, "1.0", events=1, last_activity_at=5.0)
    assert await db.threads.touch(key, now=7.0, owner_agent="billing_agent")
    assert await db.threads.set_status(key, "handed_off")
    assert await db.threads.flag(key, "customer is angry")
    record = await db.threads.get(key)
    assert record is not None
    assert (record.last_activity_at, record.owner_agent, record.status) == (
        7.0,
        "billing_agent",
        "handed_off",
    )
    assert (record.needs_attention, record.attention_reason) == (True, "customer is angry")
    assert await db.threads.clear_flag(key)
    assert await db.threads.remap(
        key, session_id="s-new", owner_agent="refund_agent", source_session_id="s1.0"
    )
    record = await db.threads.get(key)
    assert record is not None
    assert (record.needs_attention, record.attention_reason) == (False, None)
    assert (record.session_id, record.source_session_id, record.owner_agent) == (
        "s-new",
        "s1.0",
        "refund_agent",
    )
    assert await db.threads.get_by_session("s-new") == record
    assert not await db.threads.touch(_key("9.9"), now=1.0)
    assert [t.thread_ts for t in await db.threads.list_threads(10)] == ["1.0"]


async def test_thread_find_idle_picks_quiet_undigested_unleased_threads(db: Database) -> None:
    old = NOW - IDLE_AFTER - 10
    oldest = await _thread(db, "1.0", events=2, last_activity_at=old - 50)
    idle = await _thread(db, "2.0", events=1, last_activity_at=old)
    await _thread(db, "3.0", events=3, last_activity_at=NOW - 5)  # recently active
    await _thread(db, "4.0", events=0, last_activity_at=old)  # nothing to digest
    digested = await _thread(db, "5.0", events=2, last_activity_at=old)
    leased = await _thread(db, "6.0", events=1, last_activity_at=old)
    expired = await _thread(db, "7.0", events=1, last_activity_at=old + 1)
    await _thread(db, "8.0", events=2, last_activity_at=old, answered=False)  # never answered

    assert await db.threads.claim(digested, owner="w", now=NOW - 100, lease_seconds=10)
    assert await db.threads.release(digested, owner="w", digested_seq=2, digest_id=1)
    assert await db.threads.claim(leased, owner="w", now=NOW, lease_seconds=60)
    assert await db.threads.claim(expired, owner="w", now=NOW - 120, lease_seconds=60)

    found = await db.threads.find_idle(now=NOW, idle_after=IDLE_AFTER, limit=10)
    assert [t.key for t in found] == [oldest, idle, expired]
    limited = await db.threads.find_idle(now=NOW, idle_after=IDLE_AFTER, limit=2)
    assert [t.key for t in limited] == [oldest, idle]

    record = await db.threads.get(digested)
    assert record is not None
    assert (record.digest_state, record.last_digested_seq, record.last_digest_id) == (
        "digested",
        2,
        1,
    )


async def test_thread_activity_after_a_digest_makes_it_idle_again(db: Database) -> None:
    key = await _thread(db, "1.0", events=1, last_activity_at=NOW - 5000)
    assert await db.threads.claim(key, owner="w", now=NOW - 4000, lease_seconds=60)
    assert await db.threads.release(key, owner="w", digested_seq=1)
    assert await db.threads.find_idle(now=NOW, idle_after=IDLE_AFTER, limit=10) == []

    session = await db.sessions.get_session(app_name="app", user_id="u1", session_id="s1.0")
    assert session is not None
    await db.sessions.append_event(session, Event(author="user"))
    await db.threads.touch(key, now=NOW - 3000)

    found = await db.threads.find_idle(now=NOW, idle_after=IDLE_AFTER, limit=10)
    assert [(t.key, t.last_digested_seq) for t in found] == [(key, 1)]


async def test_thread_release_keeps_pending_when_events_arrived_while_digesting(
    db: Database,
) -> None:
    key = await _thread(db, "1.0", events=2, last_activity_at=NOW - 5000)
    assert await db.threads.claim(key, owner="w", now=NOW, lease_seconds=60)
    # The digest covered e1..e1 only; e2 is still new.
    assert await db.threads.release(key, owner="w", digested_seq=1, digest_id=3)
    record = await db.threads.get(key)
    assert record is not None
    assert (record.digest_state, record.last_digested_seq, record.lease_owner) == (
        "pending",
        1,
        None,
    )


async def test_thread_claim_is_exclusive(db: Database) -> None:
    key = await _thread(db, "1.0", events=1, last_activity_at=NOW - 5000)
    other = await Database.open(db.url)  # a second engine, as another process would have
    try:
        claims = [
            (db if n % 2 else other).threads.claim(key, owner=f"w{n}", now=NOW, lease_seconds=60)
            for n in range(20)
        ]
        results = await asyncio.gather(*claims)
    finally:
        await other.close()
    assert results.count(True) == 1
    winner = f"w{results.index(True)}"
    record = await db.threads.get(key)
    assert record is not None
    assert (record.lease_owner, record.lease_expires_at) == (winner, NOW + 60)


async def test_thread_expired_lease_can_be_reclaimed(db: Database) -> None:
    key = await _thread(db, "1.0", events=1, last_activity_at=NOW - 5000)
    assert await db.threads.claim(key, owner="a", now=NOW, lease_seconds=60)
    assert not await db.threads.claim(key, owner="b", now=NOW + 59, lease_seconds=60)
    assert await db.threads.claim(key, owner="b", now=NOW + 60, lease_seconds=60)
    assert not await db.threads.release(key, owner="a")
    assert await db.threads.release(key, owner="b")
    assert await db.threads.claim(key, owner="c", now=NOW + 61, lease_seconds=60)


async def test_thread_claim_refuses_a_thread_digested_meanwhile(db: Database) -> None:
    key = await _thread(db, "1.0", events=2, last_activity_at=NOW - 5000)
    # Two processes found the thread idle; the first digests it and releases it.
    assert await db.threads.claim(key, owner="a", now=NOW, lease_seconds=60)
    assert await db.threads.release(key, owner="a", digested_seq=2, digest_id=None)
    # The second's claim comes too late: there is nothing left to digest.
    assert not await db.threads.claim(key, owner="b", now=NOW + 1, lease_seconds=60)
    await db.threads.touch(key, now=NOW + 2)
    assert not await db.threads.claim(key, owner="b", now=NOW + 3, lease_seconds=60)


async def test_for_user_lists_one_users_threads_in_a_channel_newest_first(db: Database) -> None:
    for ts, user, channel, at in (
        ("1.0", "u1", "C1", 10.0),
        ("2.0", "u1", "C1", 30.0),
        ("3.0", "u2", "C1", 40.0),
        ("4.0", "u1", "C2", 50.0),
        ("5.0", "u1", "C1", 20.0),
    ):
        key = ThreadKey(team_id="T1", channel_id=channel, thread_ts=ts)
        await db.threads.create(key, session_id=f"s{ts}", app_name="app", user_id=user, now=at)

    mine = await db.threads.for_user(team_id="T1", channel_id="C1", user_id="u1", limit=2)

    assert [r.thread_ts for r in mine] == ["2.0", "5.0"]


async def test_a_threads_session_is_found_and_created_once(db: Database) -> None:
    record = await db.threads.create(
        _key("1.0"), session_id="s1", app_name="app", user_id="u1", now=NOW
    )
    assert await db.sessions.of_thread(record) is None

    created = await db.sessions.ensure_of_thread(record)
    await db.sessions.append_event(created, Event(author="user"))
    found = await db.sessions.ensure_of_thread(record)

    assert (created.id, found.id) == ("s1", "s1")
    assert [e.author for e in found.events] == ["user"]
    loaded = await db.sessions.of_thread(record, since_compaction=True)
    assert loaded is not None and loaded.id == "s1"
