"""The SessionService contract, run on the in-memory reference, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agents.events import (
    CompactionInfo,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    Part,
    Usage,
)
from agents.sessions.service import InMemorySessionService, SessionNotFoundError, SessionService
from agents.sessions.session import Session
from storage import Database


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def service(request: pytest.FixtureRequest) -> AsyncIterator[SessionService]:
    if request.param == "memory":
        yield InMemorySessionService()
        return
    fixture = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    db = await Database.open(request.getfixturevalue(fixture))
    try:
        yield db.sessions
    finally:
        await db.close()


def _rich_events() -> list[Event]:
    call = FunctionCall(id="call_1", name="lookup_invoice", args={"invoice": "INV-7", "n": 2})
    return [
        Event(
            invocation_id="inv-1",
            author="user",
            timestamp=1_700_000_000.123456,
            parts=(Part(text="my invoice is wrong"),),
            custom_metadata={"transport_ts": "1700000000.000100", "retries": [1, 2]},
            actions=EventActions(state_delta={"topic": "billing", "temp:scratch": 1}),
        ),
        Event(
            invocation_id="inv-1",
            author="billing_agent",
            branch="support.billing_agent",
            timestamp=1_700_000_001.5,
            parts=(Part(function_call=call),),
            usage=Usage(prompt_tokens=120, completion_tokens=7, cost=0.00042),
            model="scripted",
        ),
        Event(
            invocation_id="inv-1",
            author="billing_agent",
            timestamp=1_700_000_002.25,
            parts=(
                Part(
                    function_response=FunctionResponse(
                        id="call_1", name="lookup_invoice", response={"total": 12.5, "ok": True}
                    )
                ),
            ),
            actions=EventActions(
                state_delta={"user:plan": "pro", "app:version": 3},
                transfer_to_agent="refund_agent",
                escalate=True,
                skip_summarization=True,
            ),
        ),
        Event(
            invocation_id="inv-2",
            author="compactor",
            timestamp=1_700_000_003.0,
            actions=EventActions(
                compaction=CompactionInfo(
                    start_event_id="e1",
                    end_event_id="e3",
                    summary="User disputes INV-7.",
                    invocation_ids=("inv-1",),
                )
            ),
            error_code=None,
        ),
        Event(
            invocation_id="inv-2",
            author="billing_agent",
            timestamp=1_700_000_004.75,
            parts=(Part(text="Refund issued."),),
            error_code="model_error",
            error_message="upstream said no",
        ),
    ]


async def test_session_create_and_get(service: SessionService) -> None:
    created = await service.create_session(
        app_name="app", user_id="u1", state={"topic": "x", "app:tier": 1, "user:lang": "fr"}
    )
    assert created.state == {"topic": "x", "app:tier": 1, "user:lang": "fr"}
    assert created.events == []
    loaded = await service.get_session(app_name="app", user_id="u1", session_id=created.id)
    assert loaded is not None
    assert loaded.id == created.id
    assert loaded.state == created.state
    assert loaded.created_at == pytest.approx(created.created_at)
    assert loaded.events_complete
    assert await service.get_session(app_name="app", user_id="u2", session_id=created.id) is None
    assert await service.get_session(app_name="app", user_id="u1", session_id="nope") is None


async def test_session_create_with_existing_id_fails(service: SessionService) -> None:
    await service.create_session(app_name="app", user_id="u1", session_id="s1")
    with pytest.raises(ValueError, match="already exists"):
        await service.create_session(app_name="app", user_id="u1", session_id="s1")


async def test_session_append_and_reload_field_by_field(service: SessionService) -> None:
    session = await service.create_session(app_name="app", user_id="u1", session_id="s1")
    originals = _rich_events()
    stored = [await service.append_event(session, event) for event in originals]

    assert [e.id for e in stored] == ["e1", "e2", "e3", "e4", "e5"]
    assert "temp:scratch" not in stored[0].actions.state_delta
    assert session.events == stored
    loaded = await service.get_session(app_name="app", user_id="u1", session_id="s1")
    assert loaded is not None
    assert loaded.events == stored
    for original, reloaded in zip(originals, loaded.events, strict=True):
        assert reloaded.timestamp == original.timestamp
        assert reloaded.parts == original.parts
        assert reloaded.usage == original.usage
        assert reloaded.actions.compaction == original.actions.compaction
        assert reloaded.actions.transfer_to_agent == original.actions.transfer_to_agent
        assert reloaded.custom_metadata == original.custom_metadata
    assert loaded.last_update_time == originals[-1].timestamp


async def test_session_state_prefixes(service: SessionService) -> None:
    first = await service.create_session(app_name="app", user_id="u1", session_id="s1")
    second = await service.create_session(app_name="app", user_id="u1", session_id="s2")
    other = await service.create_session(app_name="app", user_id="u2", session_id="s3")
    delta = {"own": 1, "app:shared": "a", "user:mine": "m", "temp:gone": True}
    await service.append_event(first, Event(author="user", actions=EventActions(state_delta=delta)))
    assert first.state == {"own": 1, "app:shared": "a", "user:mine": "m"}

    async def load(session_id: str, user_id: str) -> Session | None:
        return await service.get_session(app_name="app", user_id=user_id, session_id=session_id)

    reloaded = await load("s1", "u1")
    assert reloaded is not None and reloaded.state == first.state
    sibling = await load(second.id, "u1")
    assert sibling is not None and sibling.state == {"app:shared": "a", "user:mine": "m"}
    stranger = await load(other.id, "u2")
    assert stranger is not None and stranger.state == {"app:shared": "a"}
    listed = {s.id: s.state for s in await service.list_sessions(app_name="app")}
    assert listed == {
        "s1": {"own": 1, "app:shared": "a", "user:mine": "m"},
        "s2": {"app:shared": "a", "user:mine": "m"},
        "s3": {"app:shared": "a"},
    }
    mine = await service.list_sessions(app_name="app", user_id="u1")
    assert sorted(s.id for s in mine) == ["s1", "s2"]
    assert all(s.events == [] for s in mine)


async def test_session_since_compaction_loads_the_window(service: SessionService) -> None:
    session = await service.create_session(app_name="app", user_id="u1", session_id="s1")
    for i in range(6):
        await service.append_event(session, Event(author="user", parts=(Part(text=f"m{i}"),)))
    compaction = CompactionInfo(start_event_id="e3", end_event_id="e5", summary="sum")
    await service.append_event(
        session, Event(author="compactor", actions=EventActions(compaction=compaction))
    )
    await service.append_event(session, Event(author="user", parts=(Part(text="after"),)))

    window = await service.get_session(
        app_name="app", user_id="u1", session_id="s1", since_compaction=True
    )
    assert window is not None
    assert [e.id for e in window.events] == ["e3", "e4", "e5", "e6", "e7", "e8"]
    assert not window.events_complete
    full = await service.get_session(app_name="app", user_id="u1", session_id="s1")
    assert full is not None and len(full.events) == 8 and full.events_complete


async def test_session_since_compaction_without_compaction_is_complete(
    service: SessionService,
) -> None:
    session = await service.create_session(app_name="app", user_id="u1", session_id="s1")
    await service.append_event(session, Event(author="user", parts=(Part(text="hi"),)))
    window = await service.get_session(
        app_name="app", user_id="u1", session_id="s1", since_compaction=True
    )
    assert window is not None and [e.id for e in window.events] == ["e1"]
    assert window.events_complete


class _Refused(Exception):
    pass


async def test_session_append_runs_a_write_along_or_stores_nothing(
    service: SessionService,
) -> None:
    session = await service.create_session(app_name="app", user_id="u1")
    ran: list[object] = []

    async def along(transaction: object) -> None:
        ran.append(transaction)

    async def refuse(transaction: object) -> None:
        raise _Refused

    said = Event(invocation_id="i1", author="user", parts=(Part(text="hi"),))
    stored = await service.append_event(session, said, along=along)
    assert len(ran) == 1
    again = Event(invocation_id="i2", author="user", parts=(Part(text="again"),))
    with pytest.raises(_Refused):
        await service.append_event(session, again, along=refuse)
    # The refused append stored nothing, in the store or in the session object.
    assert [e.id for e in session.events] == [stored.id]
    reloaded = await service.get_session(app_name="app", user_id="u1", session_id=session.id)
    assert reloaded is not None and [e.text for e in reloaded.events] == ["hi"]
    # The next append takes the id the refused one did not.
    follow = Event(invocation_id="i2", author="user", parts=(Part(text="later"),))
    assert (await service.append_event(session, follow)).id == "e2"


async def test_session_delete(service: SessionService) -> None:
    session = await service.create_session(app_name="app", user_id="u1", session_id="s1")
    await service.append_event(session, Event(author="user", parts=(Part(text="hi"),)))
    await service.delete_session(app_name="app", user_id="u1", session_id="s1")
    assert await service.get_session(app_name="app", user_id="u1", session_id="s1") is None
    assert await service.list_sessions(app_name="app") == []
    with pytest.raises(SessionNotFoundError):
        await service.append_event(session, Event(author="user"))
    again = await service.create_session(app_name="app", user_id="u1", session_id="s1")
    stored = await service.append_event(again, Event(author="user"))
    assert stored.id == "e1"
