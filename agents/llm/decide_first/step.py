"""One agent step's model calls: what every part of a decide-first step shares."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agents.events import Usage
from agents.llm.decide_first.options import StepOptions
from agents.metrics import REGISTRY
from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ChoiceScoring, ModelProfile

Generate = Callable[[LlmRequest], Awaitable[LlmResponse]]
"""The agent's model-call path: budget, before/after model callbacks and plugins."""

REGISTRY.describe(
    "support_bot_output_cut_total", "counter", "Model answers cut at their output budget, by agent"
)


class Step:
    """One agent step: its request and options, the path each of its model calls takes
    (`generate`), the usage summed over them, and how its decisions are asked and read
    (the model's profile; a model that does not decide first reads them greedily)."""

    def __init__(
        self,
        request: LlmRequest,
        options: StepOptions,
        generate: Generate,
        profile: ModelProfile,
    ) -> None:
        self.request = request
        self.options = options
        self.generate = generate
        self.scoring: ChoiceScoring = profile.choice_scoring if profile.decide_first else "greedy"
        self.layouts = profile.decision_layouts
        self.usage = Usage()
        self.reasked = False

    async def call(self, request: LlmRequest) -> LlmResponse:
        """One model call of the step, its usage added to the step's."""
        response = await self.generate(request)
        self.usage = self.usage + (response.usage or Usage()).model_copy(update={"calls": 1})
        if response.finish_reason == "length":
            REGISTRY.inc("support_bot_output_cut_total", agent=self.options.agent)
        return response

    def done(self, response: LlmResponse) -> LlmResponse:
        """`response` as the step's answer, carrying the usage of all its calls."""
        return response.model_copy(update={"usage": self.usage})
