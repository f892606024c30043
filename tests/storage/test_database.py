"""Opening the database, its health, and a user's deletion request."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import sqlalchemy as sa

from agents.events import Event, EventActions, Part
from agents.sessions.session import Session
from agents.summary.windows import StoredWindow, span_of
from storage import Database, DatabaseUnavailableError
from storage.delivery.inflight import InflightKey
from storage.feedback import FeedbackClick
from storage.schema import metadata
from storage.threads import ThreadKey, ThreadRecord
from tests.storage.test_records import Run

USER = "U0FORGETME"
KEEP = "U0KEEPME"


def _assert_one_line(error: DatabaseUnavailableError) -> None:
    assert "\n" not in str(error)
    assert error.__cause__ is None and error.__suppress_context__


async def test_database_unreachable_sqlite_gives_one_line(tmp_path: Path) -> None:
    with pytest.raises(DatabaseUnavailableError, match="cannot open database") as caught:
        await Database.open(f"sqlite:///{tmp_path}/missing/dir/bot.db")
    _assert_one_line(caught.value)


async def test_database_unreachable_postgres_gives_one_line() -> None:
    with pytest.raises(DatabaseUnavailableError, match="cannot open database") as caught:
        await Database.open("postgresql://bot:secret@127.0.0.1:1/bot")
    _assert_one_line(caught.value)
    assert "secret" not in str(caught.value)


async def test_database_healthcheck(db: Database) -> None:
    assert await db.healthcheck()


async def _populate(db: Database, user: str, tag: str) -> None:
    session = await db.sessions.create_session(
        app_name="app", user_id=user, session_id=f"{tag}-s1", state={"user:lang": "en"}
    )
    stored = []
    for text in ("hello", "bye"):
        event = await db.sessions.append_event(
            session,
            Event(
                author="user",
                parts=(Part(text=f"{text} from {user}"),),
                actions=EventActions(state_delta={"user:seen": True, "app:count": 1}),
            ),
        )
        stored.append(event)
    key = ThreadKey(team_id="T1", channel_id="C1", thread_ts=f"{tag}.1")
    await db.threads.create(key, session_id=session.id, app_name="app", user_id=user, now=1.0)
    posted = await db.digests.add(
        record={"goal": f"help {user}"}, source_session_id=session.id, thread=key
    )
    # Posted as two Slack messages.
    for page in (1, 2):
        assert await db.digests.set_posted(posted, f"{tag}.{page + 10}", page=page)
    await db.digests.add(record={"goal": "x"}, source_session_id="elsewhere", user_id=user)
    await db.inflight.accept(
        InflightKey(team_id="T1", channel_id="C1", message_ts=f"{tag}.2"),
        thread_ts=f"{tag}.1",
        message={"user": user, "text": f"pending from {user}"},
        delivery_key=f"message:T1:C1:{tag}.2",
        owner="proc",
        now=1.0,
    )
    await db.memory.add(
        user_id=user, session_id=session.id, kind="fact", text="uses SSO", event_ids=["e1"]
    )

    await db.summary_runs.add(
        Run(session_id=session.id, first_attempt_pass=True, fallback=False, attempts=1, cost=0.1)
    )
    # A window record of the session: it quotes the user.
    window = StoredWindow(span=span_of(stored), status="passed", record={"goal": f"help {user}"})
    await db.windows.save(session.id, window)
    click = FeedbackClick(
        team_id="T1",
        channel_id="C1",
        thread_ts=f"{tag}.1",
        session_id=session.id,
        event_id="e2",
        agent="billing_agent",
        user_id=user,
        value="negative",
        marker="customer",
    )
    await db.feedback.record(click, now=1.0)


async def _rows_naming(db: Database, needle: str) -> list[tuple[str, tuple[object, ...]]]:
    found = []
    async with db.engine.connect() as conn:
        for table in metadata.sorted_tables:
            for row in await conn.execute(sa.select(table)):
                if needle in repr(tuple(row)):
                    found.append((table.name, tuple(row)))
    return found


async def test_database_forget_user_leaves_no_row_naming_them(db: Database) -> None:
    await _populate(db, USER, "gone")
    await _populate(db, KEEP, "kept")
    before = await _rows_naming(db, KEEP)

    report = await db.forget_user(USER)
    counts = report.counts

    assert sorted(report.posted_digests) == ["gone.11", "gone.12"]
    assert counts == {
        "spoken_events": 0,
        "compactions": 0,
        "events": 2,
        "summary_runs": 1,
        "digest_messages": 2,
        "digests": 2,
        "windows": 1,
        "memory": 1,
        "threads": 1,
        "feedback": 1,
        "user_state": 2,
        "user_rates": 0,
        "dm_conversations": 0,
        "dm_folded": 0,
        "deliveries": 1,  # the unanswered message's
        "inflight": 1,
        "sessions": 1,
        "session_state": 0,
        "owner_user_state": 0,
        "app_state": 0,
    }
    assert await _rows_naming(db, USER) == []
    assert await _rows_naming(db, "gone-") == []
    assert await _rows_naming(db, "gone.2") == []
    assert await _rows_naming(db, KEEP) == before
    kept = await db.sessions.get_session(app_name="app", user_id=KEEP, session_id="kept-s1")
    assert kept is not None and len(kept.events) == 2
    assert kept.state == {"user:lang": "en", "user:seen": True, "app:count": 1}
    assert (await db.forget_user(USER)).counts == dict.fromkeys(counts, 0)


async def test_database_forget_user_redacts_hand_off_records_made_from_their_words(
    db: Database,
) -> None:
    from bot.threads.handoff import hand_to_agent
    from storage.forget import HANDOFF_REDACTED, SPEAKER_ID

    async def thread(tag: str) -> tuple[ThreadRecord, Session]:
        """KEEP's thread in which USER spoke once."""
        key = ThreadKey(team_id="T1", channel_id="C1", thread_ts=f"{tag}.1")
        record = await db.threads.create(
            key, session_id=f"{tag}-s1", app_name="app", user_id=KEEP, empty_session=True, now=1.0
        )
        session = await db.sessions.of_thread(record)
        assert session is not None
        said = Event(author="user", parts=(Part(text=f"{tag}: my card is 4111"),))
        speaker = USER if tag == "spoken" else KEEP
        await db.sessions.append_event(session, said.with_metadata(**{SPEAKER_ID: speaker}))
        return record, session

    async def hand_on(record: ThreadRecord, session: Session, text: str) -> str:
        new_id = await hand_to_agent(db, record, session, "billing_agent", text)
        fresh = await db.threads.get(record.key)
        assert fresh is not None and fresh.session_id == new_id
        return new_id

    async def record_text(session_id: str) -> str:
        session = await db.sessions.get_session(app_name="app", user_id=KEEP, session_id=session_id)
        assert session is not None
        return session.events[0].text

    spoken, source = await thread("spoken")
    # Handed off twice: the second record quotes the first, and the thread's row now
    # names only the second hand-off's source.
    first = await hand_on(spoken, source, "Handed off: 'spoken: my card is 4111'")
    first_record = await db.threads.get(spoken.key)
    assert first_record is not None
    first_session = await db.sessions.of_thread(first_record)
    assert first_session is not None
    second = await hand_on(first_record, first_session, "Handed off again: card 4111")
    other, other_source = await thread("other")
    untouched = await hand_on(other, other_source, "Handed off: 'other: my card is 4111'")

    report = await db.forget_user(USER)

    assert report.redacted_handoffs == 2
    assert await record_text(first) == HANDOFF_REDACTED
    assert await record_text(second) == HANDOFF_REDACTED
    assert await record_text(untouched) == "Handed off: 'other: my card is 4111'"


async def _spoken_thread(db: Database) -> tuple[ThreadRecord, Session]:
    """KEEP's thread: KEEP's turn wrote `user:note` and `diagnosis`; USER's turn (a
    message and the answer to it) wrote them again with USER's words, and `app:last`."""
    from storage.forget import SPEAKER_ID

    key = ThreadKey(team_id="T1", channel_id="C1", thread_ts="state.1")
    record = await db.threads.create(
        key, session_id="state-s1", app_name="app", user_id=KEEP, empty_session=True, now=1.0
    )
    session = await db.sessions.of_thread(record)
    assert session is not None
    turns = [
        (KEEP, "kept-inv", {"user:note": "kept", "diagnosis": "printer jam"}),
        (USER, "gone-inv", {"user:note": "u@x.example", "diagnosis": "u@x.example", "app:last": 1}),
    ]
    for speaker, invocation, delta in turns:
        said = Event(author="user", invocation_id=invocation, parts=(Part(text="hi"),))
        await db.sessions.append_event(session, said.with_metadata(**{SPEAKER_ID: speaker}))
        answer = Event(
            author="support_supervisor",
            invocation_id=invocation,
            parts=(Part(text="noted"),),
            actions=EventActions(state_delta=delta),
        )
        await db.sessions.append_event(session, answer)
    return record, session


async def test_database_forget_user_takes_back_the_state_their_turns_wrote(db: Database) -> None:
    await _spoken_thread(db)
    report = await db.forget_user(USER)
    loaded = await db.sessions.get_session(app_name="app", user_id=KEEP, session_id="state-s1")
    assert loaded is not None
    assert loaded.state == {"user:note": "kept", "diagnosis": "printer jam"}
    assert await _rows_naming(db, "u@x.example") == []
    assert report.counts["spoken_events"] == 2
    assert report.counts["session_state"] == 1
    assert report.counts["owner_user_state"] == 1
    assert report.counts["app_state"] == 1


async def test_database_forget_user_holds_the_threads_lock_on_postgres(db: Database) -> None:
    """A bot process writing in the thread holds its lock: forget waits for it, and so
    also removes what that process wrote meanwhile."""
    from storage.forget import SPEAKER_ID

    if db.gate.is_sqlite:
        pytest.skip("SQLite: forget refuses to run beside a bot instead (bot.ops.running)")
    record, _ = await _spoken_thread(db)
    other = await Database.open(db.url)  # another process's connection pool and locks
    try:
        lock = other.thread_locks.hold(record.key)
        await lock.__aenter__()
        try:
            forgetting = asyncio.create_task(db.forget_user(USER))
            done, _ = await asyncio.wait({forgetting}, timeout=1.0)
            assert not done  # waiting for the thread
            session = await other.sessions.of_thread(record)
            assert session is not None
            late = Event(author="user", invocation_id="late", parts=(Part(text="u@x.example"),))
            await other.sessions.append_event(session, late.with_metadata(**{SPEAKER_ID: USER}))
        finally:
            await lock.__aexit__(None, None, None)
        report = await forgetting
    finally:
        await other.close()
    assert report.locked_threads == 1
    assert report.counts["spoken_events"] == 3
    assert await _rows_naming(db, "u@x.example") == []
