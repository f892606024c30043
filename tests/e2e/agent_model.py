"""A scripted model for whole trees: each agent (and compaction) plays its own queue."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from typing import Any

from agents.llm.decide_first.choices import NO
from agents.llm.decide_first.prompts import CONSULT_TITLE, REVIEW_TITLE
from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import DECIDE_FIRST, ModelProfile

DEFAULT_ANSWER = "Noted."
DECISION = "decision"  # the schema title of a decide-first step's first choice


class AgentModel:
    """Answers each request with the next step scripted for `request.agent_name`.

    A step is text, an `LlmResponse` or an exception to raise; an agent with no steps left answers
    `DEFAULT_ANSWER`, and compaction answers `compaction_summary`. Every request is kept.

    `decide_first=True` plays the embedded model's profile (`DECIDE_FIRST`): each agent
    decides to answer itself, its scripted step is the reply, and the review sends that
    reply as written (no tool consulted), so a script lists only what is said.
    """

    name = "by-agent"

    def __init__(
        self,
        steps: dict[str, Iterable[str | LlmResponse | BaseException]] | None = None,
        *,
        compaction_summary: str = "Summary of the earlier turns.",
        decide_first: bool = False,
    ) -> None:
        self.profile: ModelProfile = DECIDE_FIRST if decide_first else ModelProfile()
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
        schema = request.response_schema or {}
        if self.profile.decide_first and schema.get("title") in (DECISION, REVIEW_TITLE):
            assert request.agent_name in schema["enum"], (request.agent_name, schema)
            return LlmResponse.from_text(json.dumps(request.agent_name))
        if self.profile.decide_first and schema.get("title") == CONSULT_TITLE:
            return LlmResponse.from_text(json.dumps(NO))
        queue = self.steps.get(request.agent_name)
        step: Any = queue.popleft() if queue else None
        if step is None:
            step = self.compaction_summary if request.agent_name == "compaction" else DEFAULT_ANSWER
        if isinstance(step, BaseException):
            raise step
        return step if isinstance(step, LlmResponse) else LlmResponse.from_text(step)
