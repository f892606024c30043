"""The model contract: one request in, one response out (or, streamed, text deltas
and then that one response)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agents.events import FunctionCall, Part, Usage
from agents.models.profile import ModelProfile


class Content(BaseModel):
    """One message of the model's conversation.

    `role` is `user`, `model` or `system`. Context from other agents, summaries and
    fenced data are sent as `user` or `system` text, never as the model's own turns.
    """

    model_config = ConfigDict(frozen=True)

    role: Literal["user", "model", "system"]
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if p.text)


class GenerateConfig(BaseModel):
    """Sampling settings passed through to the model."""

    model_config = ConfigDict(frozen=True, extra="allow")

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    repetition_penalty: float | None = None
    top_logprobs: int | None = None
    """Ask for the log-probabilities of this many alternatives at each answer token (a
    server that cannot give them answers without; see `LlmResponse.logprobs`)."""


class TokenLogprobs(BaseModel):
    """One answer token and the log-probabilities of its top alternatives, as the model
    saw them before any constrained decoding narrowed its choice."""

    model_config = ConfigDict(frozen=True)

    token: str
    top: dict[str, float] = Field(default_factory=dict)


class ToolDeclaration(BaseModel):
    """A function the model may call: name, description and a JSON schema of its args."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    consult_before: str = ""
    """The replies that need this tool first, as the tree says ("promises a refund"): a
    decide-first model checks each written reply against it (`agents.llm.decide_first`)."""


class LlmRequest(BaseModel):
    """Everything one model call needs. Built fresh for every call."""

    model: str | None = None
    agent_name: str = ""
    system_instruction: str = ""
    contents: list[Content] = Field(default_factory=list)
    tools: list[ToolDeclaration] = Field(default_factory=list)
    config: GenerateConfig = Field(default_factory=GenerateConfig)
    response_schema: dict[str, Any] | None = None

    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    def find_tool(self, name: str) -> ToolDeclaration | None:
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None


class LlmResponse(BaseModel):
    """One model answer: text and/or function calls, with usage and cost.

    `partial` marks a streamed text delta (see `StreamingModel`): a piece of the answer
    to show as it arrives, never the answer itself.
    """

    model_config = ConfigDict(frozen=True)

    parts: tuple[Part, ...] = ()
    partial: bool = False
    usage: Usage | None = None
    model: str | None = None
    finish_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    logprobs: tuple[TokenLogprobs, ...] = ()
    """Per answer token, when the request asked for `top_logprobs` and the server gave them."""

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if p.text)

    @property
    def function_calls(self) -> list[FunctionCall]:
        return [p.function_call for p in self.parts if p.function_call is not None]

    @classmethod
    def from_text(cls, text: str, **kwargs: Any) -> LlmResponse:
        return cls(parts=(Part(text=text),), **kwargs)


@runtime_checkable
class Model(Protocol):
    """Anything that answers an `LlmRequest`. `name` appears on model-response events.

    `profile` says what the model can do and how agent steps use it
    (`agents.models.profile`): a model without native tool calling, say, is asked for a
    constrained decision before a reply (`agents.llm.decide_first`).
    """

    name: str

    @property
    def profile(self) -> ModelProfile: ...

    async def generate(self, request: LlmRequest) -> LlmResponse: ...


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A `Model` that can also stream: `generate_stream` yields partial responses (text
    deltas, `partial=True`) as the model writes, then exactly one complete response,
    the same `generate` would have returned. A request it cannot stream (prompted tools,
    a response schema) yields only the complete response."""

    def generate_stream(self, request: LlmRequest) -> AsyncIterator[LlmResponse]: ...


class ModelError(Exception):
    """A model call failed after its retries. `code` is a short machine-readable reason."""

    def __init__(self, message: str, *, code: str = "model_error") -> None:
        super().__init__(message)
        self.code = code
