"""A scripted model for tests: plays a queue of responses and records every request."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

from agents.events import FunctionCall, Part, Usage
from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import DECIDE_FIRST, ModelProfile


class Deltas(tuple[str, ...]):
    """A text answer scripted as the exact deltas a streaming model sends (see `deltas`)."""


Step = str | Deltas | LlmResponse | BaseException | Callable[[LlmRequest], "LlmResponse | str"]


class UnexpectedModelCall(AssertionError):
    """The code under test called the model more often than the script allows."""


class ScriptedModel:
    """Answers each call with the next scripted step.

    A step is a string (text), an `LlmResponse`, an exception to raise, or a callable
    that receives the request and returns either. A call with no step left raises
    `UnexpectedModelCall`; `assert_complete()` fails if steps are left over, and the test
    suite calls it after every test for each model made during it (`record_created`),
    unless `partial` gives the reason why this script may end with steps unplayed.
    `profile` is the model's profile (default: a model with native tool calling);
    `decide_first=True` is short for `profile=DECIDE_FIRST`, a model without native tool
    calling whose steps decide first (see `agents.llm.decide_first`).

    Streamed (`generate_stream`), a text answer arrives as deltas of `chunk_chars`
    characters `chunk_delay` seconds apart, or as the exact pieces of a `Deltas` step;
    any other answer arrives whole.
    """

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        name: str = "scripted",
        decide_first: bool = False,
        profile: ModelProfile | None = None,
        chunk_chars: int = 8,
        chunk_delay: float = 0.0,
        partial: str | None = None,
    ) -> None:
        if decide_first and profile is not None:
            raise ValueError("give decide_first=True or a profile, not both")
        self.name = name
        self.partial = partial
        self.profile = profile or (DECIDE_FIRST if decide_first else ModelProfile())
        self.chunk_chars = chunk_chars
        self.chunk_delay = chunk_delay
        self._steps: deque[Step] = deque(steps)
        self.requests: list[LlmRequest] = []
        for made in _recording:
            made.append(self)

    def add(self, *steps: Step) -> ScriptedModel:
        self._steps.extend(steps)
        return self

    @property
    def remaining(self) -> int:
        return len(self._steps)

    async def generate(self, request: LlmRequest) -> LlmResponse:
        step = self._next(request)
        if isinstance(step, Deltas):
            step = "".join(step)
        return self._response(request, step)

    async def generate_stream(self, request: LlmRequest) -> AsyncIterator[LlmResponse]:
        """The next step as a stream: text in deltas, then the whole response."""
        step = self._next(request)
        if isinstance(step, str):
            size = max(1, self.chunk_chars)
            step = Deltas(step[i : i + size] for i in range(0, len(step), size))
        if isinstance(step, Deltas):
            for piece in step:
                if self.chunk_delay:
                    await asyncio.sleep(self.chunk_delay)
                yield LlmResponse.from_text(piece, model=self.name, partial=True)
            step = "".join(step)
        yield self._response(request, step)

    def _next(self, request: LlmRequest) -> Step:
        self.requests.append(request)
        if not self._steps:
            raise UnexpectedModelCall(
                f"unexpected model call #{len(self.requests)} from {request.agent_name!r}; "
                f"last content: {request.contents[-1].text[:200] if request.contents else ''!r}"
            )
        step = self._steps.popleft()
        if callable(step) and not isinstance(step, (LlmResponse, BaseException)):
            step = step(request)
        return step

    def _response(self, request: LlmRequest, step: Step) -> LlmResponse:
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str):
            return LlmResponse.from_text(step, model=self.name, usage=_usage(request, step))
        if isinstance(step, LlmResponse):
            return step
        raise TypeError(f"unsupported scripted step {step!r}")

    def assert_complete(self) -> None:
        """Fail if scripted steps are left over."""
        if self._steps:
            raise AssertionError(
                f"{len(self._steps)} scripted model steps of {self.name!r} were never used "
                f"(after {len(self.requests)} calls); trim the script, or say why it may end "
                "early with ScriptedModel(..., partial=reason)"
            )


# The lists of the `record_created` blocks open now.
_recording: list[list[ScriptedModel]] = []


@contextlib.contextmanager
def record_created() -> Iterator[list[ScriptedModel]]:
    """Every `ScriptedModel` made while the block runs, in the list it yields (the test
    suite checks each one's script was played to the end)."""
    made: list[ScriptedModel] = []
    _recording.append(made)
    try:
        yield made
    finally:
        _recording.remove(made)


def _usage(request: LlmRequest, text: str) -> Usage:
    prompt = sum(len(c.text) for c in request.contents) + len(request.system_instruction)
    return Usage(prompt_tokens=prompt // 4, completion_tokens=len(text) // 4)


def call(name: str, /, **args: Any) -> LlmResponse:
    """A scripted response that calls one function."""
    return LlmResponse(parts=(Part(function_call=FunctionCall(name=name, args=args)),))


def deltas(*pieces: str) -> Deltas:
    """A scripted text answer that a streaming caller receives as exactly `pieces`."""
    return Deltas(pieces)


def transfer(agent_name: str) -> LlmResponse:
    """A scripted response that transfers to `agent_name`."""
    return call("transfer_to_agent", agent_name=agent_name)


def json_text(value: Any) -> str:
    """A scripted text answer holding `value` as JSON."""
    return json.dumps(value)
