"""The review of a written reply on a decide-first model, when a tool is left that was not
called this turn.

A tool whose tree entry says which replies need it first (`consult_before: promise ... a
refund`) is a yes/no classification of the reply against that text: on a yes the reply
is dropped, the tool is consulted and the reply is written again with its answer in view.
The embedded Qwen 1.5B classifies well but seldom holds its own reply back when asked
"send it, or consult a tool?" (in a probe it sent 4 of 4 refund promises), so the question
is put as a classification. Tools without `consult_before` get that older question: one
constrained choice between sending the reply and consulting each of them, read against
their descriptions.
"""

from __future__ import annotations

from agents.llm.decide_first.acts import tool_call
from agents.llm.decide_first.choice_scores import CONTENT_FREE
from agents.llm.decide_first.choices import NO, YES, Choice
from agents.llm.decide_first.decision import decide
from agents.llm.decide_first.prompts import consult_request, review_request
from agents.llm.decide_first.step import Step
from agents.metrics import REGISTRY
from agents.models.base import LlmRequest, LlmResponse, ToolDeclaration

REGISTRY.describe(
    "support_bot_reviews_total", "counter", "Written replies held back to consult a tool, by agent"
)


async def review(step: Step, response: LlmResponse) -> LlmResponse:
    """A written reply, or the call of a tool it needs first. A tool whose tree entry
    says which replies need it (`consult_before`) is a yes/no check of the reply; the
    other tools not called this turn are one more decision, between sending it and
    each of them, read against their descriptions. The reply is dropped for the tool;
    the agent's next step answers with the tool's result in view."""
    tools = [c for c in step.options.choices(answer=False) if c.kind == "tool"]
    if not tools or response.function_calls or step.request.response_schema is not None:
        return step.done(response)
    if not response.text.strip():
        return step.done(response)
    declared = {t.name: t for t in step.options.tools}
    for choice in tools:
        tool = declared[choice.name]
        if tool.consult_before and await _needs(step, tool, response.text):
            return await _consult(step, tool.name)
    unmarked = [c for c in tools if not declared[c.name].consult_before]
    if not unmarked:
        return step.done(response)
    send = Choice(step.options.agent, "answer", "")
    choices = [send, *unmarked]

    def build(request: LlmRequest) -> LlmRequest:
        # A content-free request (calibration) gets a content-free draft as well.
        blank = request.contents and request.contents[-1].text == CONTENT_FREE
        return review_request(
            request,
            agent=step.options.agent,
            instruction=step.options.instruction,
            draft=CONTENT_FREE if blank else response.text,
            choices=choices,
        )

    choice = await decide(step, choices, build)
    if choice.kind != "tool":
        return step.done(response)
    return await _consult(step, choice.name)


async def _needs(step: Step, tool: ToolDeclaration, draft: str) -> bool:
    """Whether `draft` does what `tool.consult_before` says needs the tool first."""
    choices = [Choice(YES, "tool", ""), Choice(NO, "answer", "")]

    def build(request: LlmRequest) -> LlmRequest:
        blank = request.contents and request.contents[-1].text == CONTENT_FREE
        return consult_request(
            request,
            instruction=step.options.instruction,
            draft=CONTENT_FREE if blank else draft,
            tool=tool,
        )

    return (await decide(step, choices, build, record=False)).name == YES


async def _consult(step: Step, name: str) -> LlmResponse:
    REGISTRY.inc("support_bot_reviews_total", agent=step.options.agent, tool=name)
    return await tool_call(step, name)
