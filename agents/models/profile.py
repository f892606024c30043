"""`ModelProfile`: what one model can do, and how an agent step should use it.

Every `Model` carries one (`Model.profile`); the agent reads it and nothing else about the
model's kind. The profile is typed and frozen, and checked when it is made: an unknown
scoring or layout is refused then, not left out when a step runs. pydantic-ai's
`ModelProfile` is the model for it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

ChoiceScoring = Literal["greedy", "logprobs", "calibrated"]
"""How a decide-first model's constrained choice is read
(`agents.llm.decide_first.choice_scores`)."""
DecisionLayout = Literal["question", "functions"]
"""How a decide-first choice is laid out for the model: the options under a question about
the fenced conversation (`agents.llm.decide_first.prompts`), or as function signatures
(`agents.llm.decide_first.function_layout`)."""
ToolDecision = Literal["auto", "decide-first", "one-call"]
"""How a model's agent steps with tools are taken (`TOOL_DECISION`): decide first, answer
in one call, or `auto`: decide first exactly when the model has no native tool calling."""


class ModelProfile(BaseModel):
    """A model's capabilities and the way agent steps use it; the default is a hosted
    model with native tool calling, one call per step.

    `decide_first`: a step with transfer targets or tools is a constrained decision
    first, then the act (`agents.llm.decide_first`); otherwise one call answers or calls
    a tool. `choice_scoring` and `decision_layouts` say how such a decision is asked and
    read; a model that does not decide first still uses the layouts for the rare decision
    its pretend-action check asks, and always reads it greedily.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    native_tools: bool = True
    """Tool declarations reach the model as native tool calls; without, its adapter
    describes them in the prompt and parses a JSON answer (`agents.models.prompted_tools`)."""
    decide_first: bool = False
    """Agent steps with tools or transfer targets decide first, then act."""
    choice_scoring: ChoiceScoring = "greedy"
    """How a decision is read: the constrained answer (`greedy`), or the options'
    log-probabilities, raw (`logprobs`) or divided by a content-free prior (`calibrated`)."""
    decision_layouts: tuple[DecisionLayout, ...] = ("question",)
    """How a decision is laid out, in order; several are each asked and read together by
    their log-probabilities. At least one, none twice."""

    @field_validator("decision_layouts")
    @classmethod
    def _some_layouts_once_each(
        cls, layouts: tuple[DecisionLayout, ...]
    ) -> tuple[DecisionLayout, ...]:
        if not layouts:
            raise ValueError("decision layouts must name at least one layout")
        if len(set(layouts)) != len(layouts):
            raise ValueError(f"decision layouts must not repeat a layout: {layouts}")
        return layouts

    @classmethod
    def for_tool_decision(
        cls,
        decision: ToolDecision,
        *,
        native_tools: bool,
        choice_scoring: ChoiceScoring = "greedy",
        decision_layouts: tuple[DecisionLayout, ...] = ("question",),
    ) -> ModelProfile:
        """The profile of a model with (or without) `native_tools` under `TOOL_DECISION`:
        `auto` decides first exactly when tools cannot go out natively."""
        if decision not in ("auto", "decide-first", "one-call"):
            raise ValueError(f"tool decision must be auto, decide-first or one-call: {decision!r}")
        decide_first = not native_tools if decision == "auto" else decision == "decide-first"
        return cls(
            native_tools=native_tools,
            decide_first=decide_first,
            choice_scoring=choice_scoring,
            decision_layouts=decision_layouts,
        )


DECIDE_FIRST = ModelProfile(native_tools=False, decide_first=True)
"""A model without native tool calling whose steps decide first, read greedily in the
question layout (what `TOOL_DECISION=auto` gives such a model by default)."""
