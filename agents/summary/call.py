"""The summary agent's one model path: a tool-less agent run by an ordinary `Runner`.

The draft and every completion request go through `ModelCalls.ask`, so they share the
runner's model resolution, error events and usage accounting. Each summary gets a fresh
temporary in-memory session, deleted afterwards so nothing accumulates; the agents see
no history (`include_contents="none"`), so their calls do not see each other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from agents.events import Event, Usage
from agents.llm.agent import LlmAgent
from agents.models.base import Model
from agents.runner import Runner
from agents.sessions.service import InMemorySessionService

APP = "summarizer"
USER = "summarizer"


@dataclass(frozen=True)
class Answer:
    """One model answer: its text, usage and finish reason, or why there is none."""

    text: str
    usage: Usage
    finish_reason: str | None = None
    error_code: str | None = None
    error_message: str = ""

    @property
    def failed(self) -> bool:
        return self.error_code is not None


Ask = Callable[[LlmAgent, str], Awaitable[Answer]]


class ModelCalls:
    """Runs one-shot agents for summaries; `model_factory` resolves model strings."""

    def __init__(self, model_factory: Callable[[str], Model] | None = None) -> None:
        self.model_factory = model_factory
        # Temporary summariser sessions live here only while their summary runs.
        self.session_service = InMemorySessionService()

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Ask]:
        """An `ask(agent, message)` over one temporary session, deleted on exit."""
        temp = await self.session_service.create_session(app_name=APP, user_id=USER)

        async def ask(agent: LlmAgent, message: str) -> Answer:
            return await self._ask(agent, temp.id, message)

        try:
            yield ask
        finally:
            await self.session_service.delete_session(
                app_name=APP, user_id=USER, session_id=temp.id
            )

    async def _ask(self, agent: LlmAgent, session_id: str, message: str) -> Answer:
        runner = Runner(
            agent=agent,
            app_name=APP,
            session_service=self.session_service,
            model_factory=self.model_factory,
            max_model_calls=1,
        )
        usage = Usage()
        final: Event | None = None
        async for event in runner.run_async(user_id=USER, session_id=session_id, message=message):
            if event.author != agent.name:
                continue
            if event.usage is not None:
                usage = usage + event.usage
            final = event
        if final is None:
            return Answer("", usage, error_code="no_answer")
        if final.error_code is not None:
            return Answer(
                "", usage, final.finish_reason, final.error_code, final.error_message or ""
            )
        return Answer(final.text, usage, final.finish_reason)
