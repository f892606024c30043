"""Events decoded once and shared between the loads of a session
(`storage.decoded_events`), on both backends, and the map's own bounds."""

from __future__ import annotations

from agents.events import Event, FunctionCall, Part, Usage
from storage import Database
from storage.decoded_events import DecodedEvents
from storage.threads import ThreadKey


async def _load(db: Database, session_id: str = "s1") -> list[Event]:
    session = await db.sessions.get_session(app_name="app", user_id="U1", session_id=session_id)
    assert session is not None
    return session.events


async def test_a_session_loaded_again_shares_its_events_and_sees_what_changed(
    db: Database,
) -> None:
    session = await db.sessions.create_session(app_name="app", user_id="U1", session_id="s1")
    user = await db.sessions.append_event(session, Event(author="user", parts=(Part(text="hi"),)))
    call = Event(
        author="supervisor",
        parts=(Part(function_call=FunctionCall(name="lookup", args={"order": "W1"})),),
        usage=Usage(prompt_tokens=12, completion_tokens=3),
    )
    stored_call = await db.sessions.append_event(session, call)

    first, second = await _load(db), await _load(db)
    # What this process stored is what the next load returns, decoded from nothing, and
    # it is exactly what its stored text decodes to.
    assert first[0] is user and first[1] is stored_call
    assert [a is b for a, b in zip(first, second, strict=True)] == [True, True]
    assert first == [Event.model_validate_json(e.model_dump_json()) for e in first]

    # A row rewritten in place is new text: decoded again, never served stale.
    record = await db.threads.create(
        ThreadKey(team_id="T1", channel_id="C1", thread_ts="1.0"),
        session_id="s1",
        app_name="app",
        user_id="U1",
        now=1.0,
    )
    rewrite = db.sessions.rewrite_in(record, user.with_metadata(slack_ts="1.0"))
    async with db.engine.begin() as conn:
        await rewrite(conn)
    third = await _load(db)
    assert dict(third[0].custom_metadata) == {"slack_ts": "1.0"}
    assert third[0] is not user and third[1] is stored_call


async def test_another_process_reads_the_same_rows_decoded_for_itself(db: Database) -> None:
    """A second `Database` on the same store (another process) has its own map: the rows
    decode to equal events, not to the other process's objects."""
    session = await db.sessions.create_session(app_name="app", user_id="U1", session_id="s1")
    stored = await db.sessions.append_event(session, Event(author="user", parts=(Part(text="x"),)))
    other = await Database.open(db.url.render_as_string(hide_password=False))
    try:
        [seen] = await _load(other)
        assert seen == stored and seen is not stored
        assert len(other.sessions.decoded) == 1
    finally:
        await other.close()


async def test_forgetting_a_user_drops_the_decoded_events_too(db: Database) -> None:
    session = await db.sessions.create_session(app_name="app", user_id="U1", session_id="s1")
    await db.sessions.append_event(session, Event(author="user", parts=(Part(text="secret"),)))
    await _load(db)
    assert len(db.sessions.decoded) == 1
    await db.forget_user("U1")
    assert len(db.sessions.decoded) == 0


def test_the_map_is_bounded_and_drops_its_oldest_entry_first() -> None:
    known = DecodedEvents(capacity=2)
    texts = [Event(id=f"e{i}", author="user").model_dump_json() for i in range(3)]
    first = known.decode(texts[0])
    assert known.decode(texts[0]) is first
    known.decode(texts[1])
    known.decode(texts[2])
    assert len(known) == 2
    assert known.decode(texts[0]) is not first  # evicted, decoded afresh
    assert known.decode(texts[0]) == first


def test_a_capacity_of_zero_keeps_nothing() -> None:
    known = DecodedEvents(capacity=0)
    text = Event(author="user").model_dump_json()
    assert known.decode(text) is not known.decode(text)
    known.remember(text, Event(author="user"))
    assert len(known) == 0
