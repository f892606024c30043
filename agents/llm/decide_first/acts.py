"""The act of a decide-first step, once the decision is made: a transfer becomes the
ordinary `transfer_to_agent` function call (no second call), a tool gets its arguments
written under its own parameter schema, and an answer is written with no tools in sight."""

from __future__ import annotations

import logging
from typing import Any

from agents.events import FunctionCall, Part
from agents.llm.decide_first.choices import Choice
from agents.llm.decide_first.json_answers import find_json_object_any
from agents.llm.decide_first.prompts import answer_request, arguments_request
from agents.llm.decide_first.step import Step
from agents.llm.decide_first.truncated_json import close_truncated_object
from agents.llm.transfer import TRANSFER_TOOL
from agents.models.base import LlmResponse, ModelError, ToolDeclaration

logger = logging.getLogger(__name__)


async def act(step: Step, choice: Choice) -> LlmResponse:
    """What `choice` does: transfer, call its tool, or answer."""
    if choice.kind == "transfer":
        return step.done(calls(FunctionCall(name=TRANSFER_TOOL, args={"agent_name": choice.name})))
    if choice.kind == "tool":
        return await tool_call(step, choice.name)
    return await answer(step)


async def answer(step: Step) -> LlmResponse:
    """The agent's own reply, asked for with no tools."""
    return await step.call(answer_request(step.request, step.options.instruction))


async def tool_call(step: Step, name: str) -> LlmResponse:
    """A call of tool `name`, its arguments written under the tool's parameter schema;
    arguments cut off at the output cap are closed where they stopped, if they can be."""
    tool = next(t for t in step.options.tools if t.name == name)
    response = await step.call(arguments_request(step.request, step.options.instruction, tool))
    args = find_json_object_any(response.text)
    if args is None and response.finish_reason == "length":
        args = _closed_arguments(response.text, tool)
        if args is not None:
            logger.info("%s: arguments for %s were cut off; closed", step.options.agent, name)
    if args is None:
        raise ModelError(
            f"{step.options.agent}: arguments for {name} are not a JSON object: "
            f"{response.text!r:.200}",
            code="malformed_tool_call",
        )
    return step.done(
        response.model_copy(update={"parts": calls(FunctionCall(name=name, args=args)).parts})
    )


def calls(*called: FunctionCall) -> LlmResponse:
    """A response that makes these function calls."""
    return LlmResponse(parts=tuple(Part(function_call=c) for c in called))


def _closed_arguments(text: str, tool: ToolDeclaration) -> dict[str, Any] | None:
    """Arguments cut off at the output cap, closed where they stopped
    (`agents.llm.decide_first.truncated_json`), if every required field then has a value:
    a string field must hold more than blanks. None otherwise (the turn fails as
    malformed)."""
    args = close_truncated_object(text)
    if args is None:
        return None
    required = (tool.parameters or {}).get("required", [])
    for field in required:
        value = args.get(field)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
    return args
