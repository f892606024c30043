"""The entry point of an agent step's model calls: the profile chooses the path."""

from __future__ import annotations

from agents.llm.decide_first.acts import act, answer
from agents.llm.decide_first.decision import decide
from agents.llm.decide_first.handoff_records import without_handoff_records
from agents.llm.decide_first.options import StepOptions
from agents.llm.decide_first.pretence_check import checked
from agents.llm.decide_first.review import review
from agents.llm.decide_first.step import Generate, Step
from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ModelProfile


async def respond(
    profile: ModelProfile, request: LlmRequest, options: StepOptions, *, generate: Generate
) -> LlmResponse:
    """The step's response: text, a tool call or a transfer. On a `profile` that decides
    first, a step with tools is a decision, then the act, and a written reply is reviewed;
    otherwise it is one call. Either way the answer passes the pretend-action check. Every
    model call of the step (the decision, the act, a re-ask) goes through `generate`, the
    agent's own model-call path (budget, before/after model callbacks and plugins), so the
    callbacks see each of these requests."""
    if profile.decide_first:
        request = without_handoff_records(request)
    step = Step(request, options, generate, profile)
    if profile.decide_first and request.tools:
        response = await _decide_and_act(step)
    else:
        response = await step.call(request)
    response = await checked(step, response)
    if profile.decide_first:
        response = await review(step, response)
    return response


async def _decide_and_act(step: Step) -> LlmResponse:
    choices = step.options.decision_choices()
    if len(choices) == 1:
        return await answer(step)
    return await act(step, await decide(step, choices))
