"""A scripted model for whole trees: each agent (and compaction) plays its own queue."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ModelProfile

DEFAULT_ANSWER = "Noted."


class AgentModel:
    """Answers each request with the next step scripted for `request.agent_name`.

    A step is text, an `LlmResponse` or an exception to raise; an agent with no steps left answers
    `DEFAULT_ANSWER`, and compaction answers `compaction_summary`. Every request is kept.
    """

    name = "by-agent"
    profile = ModelProfile()

    def __init__(
        self,
        steps: dict[str, Iterable[str | LlmResponse | BaseException]] | None = None,
        *,
        compaction_summary: str = "Summary of the earlier turns.",
    ) -> None:
        self.steps: dict[str, deque[str | LlmResponse | BaseException]] = {
            agent: deque(queue) for agent, queue in (steps or {}).items()
        }
        self.compaction_summary = compaction_summary
        self.requests: list[LlmRequest] = []

    def add(self, agent: str, *steps: str | LlmResponse | BaseException) -> None:
        self.steps.setdefault(agent, deque()).extend(steps)

    def requests_of(self, agent: str) -> list[LlmRequest]:
        return [r for r in self.requests if r.agent_name == agent]

    async def generate(self, request: LlmRequest) -> LlmResponse:
        self.requests.append(request)
        queue = self.steps.get(request.agent_name)
        step: Any = queue.popleft() if queue else None
        if step is None:
            step = self.compaction_summary if request.agent_name == "compaction" else DEFAULT_ANSWER
        if isinstance(step, BaseException):
            raise step
        return step if isinstance(step, LlmResponse) else LlmResponse.from_text(step)
