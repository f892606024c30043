"""Streaming a `LiteLlmModel` call: `litellm.acompletion(stream=True)`, for hosted models
and the embedded llama.cpp server alike.

Text deltas are yielded as they arrive (`LlmResponse(partial=True)`), then the complete
response rebuilt from the chunks (`litellm.stream_chunk_builder`), with usage and cost.
A failure before the first delta (a malformed tool call too) is retried as in a plain
call; after it, the text already shown cannot be taken back, so the failure ends the
call as a `ModelError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from agents.events import Part
from agents.metrics import REGISTRY
from agents.models.base import LlmRequest, LlmResponse, ModelError
from agents.models.openai_format import MalformedToolCall, from_openai_response
from agents.models.retry import classify

if TYPE_CHECKING:
    from agents.models.litellm_model import LiteLlmModel


async def stream_completion(
    model: LiteLlmModel, litellm: Any, request: LlmRequest
) -> AsyncIterator[LlmResponse]:
    """`request` streamed through `model` (which has decided it can stream: no prompted
    tools, no response schema); see the module docstring."""
    agent = request.agent_name or "unknown"
    params = {**model.request_params(request), "stream": True}
    params["stream_options"] = {"include_usage": True}
    # litellm enforces `timeout` per read; this guard only stops a call that hangs anyway.
    guard = model.timeout * 1.5 + 1.0
    retry = 0
    while True:
        chunks: list[Any] = []
        shown = False
        try:
            stream = await asyncio.wait_for(litellm.acompletion(**params), guard)
            async for chunk in stream:
                chunks.append(chunk)
                delta = _delta_text(chunk)
                if delta:
                    shown = True
                    yield LlmResponse(parts=(Part(text=delta),), partial=True, model=model.name)
            if not any(_answers(chunk) for chunk in chunks):
                # No text and no call (a server that answered something else): try again.
                raise ConnectionError("the model's stream held no answer")
        except Exception as exc:
            failure = classify(exc)
            policy = model.retry_policy
            if (
                shown
                or not failure.transient
                or retry >= policy.max_retries
                or not policy.worth_waiting(failure.retry_after)
            ):
                REGISTRY.inc("support_bot_model_errors_total", agent=agent, code=failure.code)
                raise ModelError(model.describe(failure, retry), code=failure.code) from exc
            delay = policy.delay(retry, failure.retry_after)
            model.log_retry(agent, failure.code, failure.message, retry, delay)
            retry += 1
            await asyncio.sleep(delay)
            continue
        raw = litellm.stream_chunk_builder(chunks, messages=params["messages"])
        try:
            response = from_openai_response(raw)
        except MalformedToolCall as exc:
            # A tool call showed no text, so it can be asked for again, as in a plain call.
            if shown or retry >= model.retry_policy.max_retries:
                REGISTRY.inc(
                    "support_bot_model_errors_total", agent=agent, code="malformed_tool_call"
                )
                message = f"{model.name}: malformed tool call after {retry + 1} attempts: {exc}"
                raise ModelError(message, code="malformed_tool_call") from exc
            model.log_retry(agent, "malformed_tool_call", str(exc), retry, 0.0)
            retry += 1
            continue
        usage = model.usage_of(litellm, raw)
        yield response.model_copy(update={"usage": usage, "model": model.name})
        return


def _answers(chunk: Any) -> bool:
    """Whether a stream chunk carries any of the answer (text or a tool call)."""
    try:
        delta = chunk.choices[0].delta
    except (AttributeError, IndexError):
        return False
    return bool(delta.content or getattr(delta, "tool_calls", None))


def _delta_text(chunk: Any) -> str:
    """The text a stream chunk adds (empty for role, tool-call and usage chunks)."""
    try:
        return str(chunk.choices[0].delta.content or "")
    except (AttributeError, IndexError):
        return ""
