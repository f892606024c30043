"""Streaming an agent step: partial text events while the step's answer is written.

When the caller asks for it (`Runner.run_async(streaming=True)`) and the model can
stream (`agents.models.base.StreamingModel`), each model call of a step whose answer is
prose sends its text deltas on as partial events (ADK's `partial=True`): never stored,
and followed by the step's complete event as always. Calls whose answer is JSON (a
decide-first decision, a tool's arguments, an output schema) are not streamed, so only
reply text streams.

Nothing unreviewed streams. On a model whose profile decides first
(`ModelProfile.decide_first`), a written draft is still reviewed after it is complete
(`agents.llm.decide_first.review`: a refund promise swapped for a policy consultation)
and checked for pretend actions, so such a step streams nothing: its reply shows once
the step has decided to send it, as its complete event. A workflow step that is not the
reply (a pipeline's earlier step, a loop's round, a parallel branch) does not stream
either (`agents.workflow`). On other models the complete event stays the truth as well:
a step may still turn streamed text into a transfer (a pretend action) or cut it, and a
caller showing deltas shows the complete answer in the end.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeGuard

from agents.context import InvocationContext
from agents.events import Event, Part
from agents.models.base import LlmRequest, LlmResponse, Model, ModelError, StreamingModel

TextSink = Callable[[str], None]


# A runtime-checkable Protocol's isinstance inspects every member on each call (about
# 1 % of the bot's CPU per message, asked twice per model call); a model's type decides.
_STREAMING_TYPES: dict[type, bool] = {}


def can_stream(model: Model) -> TypeGuard[StreamingModel]:
    """Whether `model` is a `StreamingModel`, answered once per model type."""
    kind = type(model)
    known = _STREAMING_TYPES.get(kind)
    if known is None:
        known = _STREAMING_TYPES[kind] = isinstance(model, StreamingModel)
    return known


def streams(ctx: InvocationContext, model: Model) -> bool:
    """Whether this agent step streams its text: asked for, the model can, and its
    drafts are final once written (not reviewed after: `ModelProfile.decide_first`)."""
    return ctx.streaming and can_stream(model) and not model.profile.decide_first


async def call_streaming(model: Model, request: LlmRequest, on_text: TextSink) -> LlmResponse:
    """One model call, its text deltas passed to `on_text` as they arrive; the complete
    response is returned. A request for JSON (a response schema) is not streamed."""
    if request.response_schema is not None or not can_stream(model):
        return await model.generate(request)
    final: LlmResponse | None = None
    async for response in model.generate_stream(request):
        if not response.partial:
            final = response
        elif response.text:
            on_text(response.text)
    if final is None:
        raise ModelError(f"{model.name}: the stream ended without an answer", code="model_error")
    return final


async def with_partials(
    ctx: InvocationContext,
    author: str,
    work: Callable[[TextSink], Awaitable[LlmResponse]],
) -> AsyncIterator[Event | LlmResponse]:
    """Run `work` (given a sink for text deltas), yielding partial events of its deltas
    while it runs, in order (those that queued up meanwhile joined into one), then its
    response. Closing the iterator cancels the work."""
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    task = asyncio.ensure_future(work(queue.put_nowait))
    task.add_done_callback(lambda _: queue.put_nowait(None))
    try:
        ended = False
        while not ended and (delta := await queue.get()) is not None:
            # Deltas that arrived while the caller was busy go out as one event: a model
            # writes per token, and nobody gains from an event per token under load.
            pieces = [delta]
            while not queue.empty():
                more = queue.get_nowait()
                if more is None:
                    ended = True
                    break
                pieces.append(more)
            # Validated construction, not `model_construct`: pydantic's `model_construct`
            # inspects each default factory's signature on every call, which made it
            # seven times slower per delta (bench/slack_load.py's profile).
            yield Event(
                invocation_id=ctx.invocation_id,
                author=author,
                branch=ctx.branch,
                parts=(Part(text="".join(pieces)),),
                partial=True,
            )
        yield await task
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
