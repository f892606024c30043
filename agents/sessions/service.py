"""The persistence contract for sessions, and an in-memory implementation of it."""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from agents.events import Event, event_seq, latest_compaction
from agents.sessions.session import Session
from agents.sessions.state import split_delta, without_temp


class SessionNotFoundError(LookupError):
    """Raised when an event is appended to a session that does not exist."""


# A caller's write that a store runs inside the transaction that stores one event
# (`SessionService.append_event(along=...)`), so both are stored or neither is. Opaque to
# the runtime: it is called with the store's own transaction handle (a SQL store's
# connection, say), and whoever builds it knows which store it is for.
TransactionWrite = Callable[[Any], Awaitable[None]]


@runtime_checkable
class SessionService(Protocol):
    """Creates, loads and appends to sessions.

    `append_event` is the only way a session changes. It assigns the event's short id
    (`e1`, `e2`, ... in append order), drops `temp:` keys from the persisted state
    delta, applies the delta to the app, user and session scopes, appends the event to
    `session.events`, and returns the stored event. Appends to one session are
    serialised, so ids and order hold even with concurrent writers. An `along` write
    (`TransactionWrite`) runs inside the transaction that stores the event: when it
    raises, nothing is stored and its exception escapes `append_event`.
    """

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session: ...

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        since_compaction: bool = False,
    ) -> Session | None:
        """Load a session with its merged state.

        With `since_compaction`, events are loaded from the start of the window that the
        latest compaction event covers (plus that event), which is all the runner and the
        next compaction need; `Session.events_complete` is then False.
        """
        ...

    async def append_event(
        self, session: Session, event: Event, *, along: TransactionWrite | None = None
    ) -> Event: ...

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> list[Session]:
        """Sessions with their state but without events."""
        ...

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None: ...


def events_since_compaction(events: list[Event]) -> list[Event]:
    """The tail of `events` that `since_compaction` loading keeps."""
    found = latest_compaction(events)
    if found is None:
        return list(events)
    latest, info = found
    return [e for e in events if e.seq >= event_seq(info.start_event_id) or e is latest]


class InMemorySessionService:
    """A `SessionService` in process memory, for tests and the runtime benchmark."""

    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str, str], Session] = {}
        self._next_seq: dict[tuple[str, str, str], int] = {}
        self._app_state: dict[str, dict[str, Any]] = defaultdict(dict)
        self._user_state: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
        self._locks: dict[tuple[str, str, str], asyncio.Lock] = defaultdict(asyncio.Lock)

    def _merged(self, stored: Session) -> dict[str, Any]:
        return {
            **stored.state,
            **self._app_state[stored.app_name],
            **self._user_state[(stored.app_name, stored.user_id)],
        }

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        sid = session_id or uuid.uuid4().hex
        key = (app_name, user_id, sid)
        if key in self._sessions:
            raise ValueError(f"session {sid} already exists")
        app, user, own = split_delta(state or {})
        self._app_state[app_name].update(app)
        self._user_state[(app_name, user_id)].update(user)
        stored = Session(id=sid, app_name=app_name, user_id=user_id, state=own)
        self._sessions[key] = stored
        self._next_seq[key] = 1
        return self._copy(stored, since_compaction=False)

    def _copy(self, stored: Session, *, since_compaction: bool) -> Session:
        events = events_since_compaction(stored.events) if since_compaction else stored.events
        return Session(
            id=stored.id,
            app_name=stored.app_name,
            user_id=stored.user_id,
            state=self._merged(stored),
            events=list(events),
            created_at=stored.created_at,
            last_update_time=stored.last_update_time,
            events_complete=len(events) == len(stored.events),
        )

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        since_compaction: bool = False,
    ) -> Session | None:
        stored = self._sessions.get((app_name, user_id, session_id))
        if stored is None:
            return None
        return self._copy(stored, since_compaction=since_compaction)

    async def append_event(
        self, session: Session, event: Event, *, along: TransactionWrite | None = None
    ) -> Event:
        """See `SessionService`; memory has no transaction handle, so `along` is called
        with None, under the session's lock and before anything is stored."""
        key = (session.app_name, session.user_id, session.id)
        async with self._locks[key]:
            stored = self._sessions.get(key)
            if stored is None:
                raise SessionNotFoundError(session.id)
            if along is not None:
                await along(None)
            seq = self._next_seq[key]
            self._next_seq[key] = seq + 1
            delta = without_temp(event.actions.state_delta)
            actions = event.actions.model_copy(update={"state_delta": delta})
            event = event.model_copy(update={"id": f"e{seq}", "actions": actions})
            app, user, own = split_delta(delta)
            self._app_state[session.app_name].update(app)
            self._user_state[(session.app_name, session.user_id)].update(user)
            stored.state.update(own)
            stored.events.append(event)
            stored.last_update_time = event.timestamp
            session.events.append(event)
            session.state.update(delta)
            session.last_update_time = event.timestamp
            return event

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> list[Session]:
        found = []
        for (app, user, _), stored in self._sessions.items():
            if app == app_name and (user_id is None or user == user_id):
                copy = self._copy(stored, since_compaction=False)
                found.append(copy.model_copy(update={"events": []}))
        return found

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        key = (app_name, user_id, session_id)
        self._sessions.pop(key, None)
        self._next_seq.pop(key, None)
        self._locks.pop(key, None)
