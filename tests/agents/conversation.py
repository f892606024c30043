"""Helpers to drive and assert whole conversations as (author, text or part) tuples."""

from __future__ import annotations

from typing import Any

from agents.base_agent import BaseAgent
from agents.errors import SessionStoreError
from agents.events import Event
from agents.models.base import Model
from agents.runner import Runner
from agents.sessions.service import InMemorySessionService, SessionService, TransactionWrite
from agents.sessions.session import Session


def simplify(event: Event) -> tuple[str, Any]:
    """An event as `(author, text)`, `(author, ("call", name, args))` or a response."""
    if event.function_calls:
        call = event.function_calls[0]
        return event.author, ("call", call.name, call.args)
    if event.function_responses:
        response = event.function_responses[0]
        return event.author, ("response", response.name, response.response)
    return event.author, event.text


class AgentWritesFail(InMemorySessionService):
    """Stores the person's message, then fails every other write as a broken disk would."""

    async def append_event(
        self, session: Session, event: Event, *, along: TransactionWrite | None = None
    ) -> Event:
        if event.author != "user":
            raise SessionStoreError("the database write failed: disk I/O error")
        return await super().append_event(session, event, along=along)


class Conversation:
    """One session driven through a runner, turn by turn."""

    def __init__(
        self,
        root: BaseAgent,
        model: Model,
        *,
        service: SessionService | None = None,
        user_id: str = "u1",
        state: dict[str, Any] | None = None,
        **runner_kwargs: Any,
    ) -> None:
        self.service = service or InMemorySessionService()
        self.runner = Runner(
            agent=root,
            app_name="support",
            session_service=self.service,
            default_model=model,
            **runner_kwargs,
        )
        self.user_id = user_id
        self._state = state or {}
        self.session_id: str | None = None

    async def start(self) -> Conversation:
        session = await self.service.create_session(
            app_name="support", user_id=self.user_id, state=self._state
        )
        self.session_id = session.id
        return self

    async def send(self, text: str) -> list[tuple[str, Any]]:
        """Send one user message; return the agents' events, simplified."""
        return [simplify(e) for e in await self.send_events(text)]

    async def send_events(self, text: str) -> list[Event]:
        if self.session_id is None:
            await self.start()
        assert self.session_id is not None
        return [
            e
            async for e in self.runner.run_async(
                user_id=self.user_id, session_id=self.session_id, message=text
            )
        ]

    async def state(self) -> dict[str, Any]:
        assert self.session_id is not None
        session = await self.service.get_session(
            app_name="support", user_id=self.user_id, session_id=self.session_id
        )
        assert session is not None
        return session.state
