"""Events: the immutable, append-only record of everything that happens in a session."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Usage(_Frozen):
    """Token usage and cost of one model call (or a sum of several).

    `calls` counts the model calls a sum was made of when the code summing them knows
    (a decide-first step's 2-4 calls); 0 means one call, or not counted apart, so
    `model_calls` is at least 1.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    calls: int = 0

    @property
    def model_calls(self) -> int:
        """How many model calls this usage stands for (at least one)."""
        return max(1, self.calls)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost=self.cost + other.cost,
            calls=self.calls + other.calls,
        )


class FunctionCall(_Frozen):
    """A model's request to run a tool. `id` pairs it with its response."""

    id: str = Field(default_factory=lambda: "call_" + uuid.uuid4().hex[:12])
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class FunctionResponse(_Frozen):
    """The result of a tool run, answering the call with the same `id`.

    `model_use` is what the model calls behind the result used, by agent: an AgentTool's
    consulted agent (and whatever it consulted in turn), whose own events stay out of the
    caller's log. The model never sees it; `/metrics` and `support-bot stats` count it.
    """

    id: str
    name: str
    response: dict[str, Any] = Field(default_factory=dict)
    model_use: dict[str, Usage] = Field(default_factory=dict)


class Part(_Frozen):
    """One piece of content: exactly one of text, function_call, function_response."""

    text: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None

    @classmethod
    def from_text(cls, text: str) -> Part:
        return cls(text=text)


class CompactionInfo(_Frozen):
    """What a compaction event covers, by event id, and the summary that replaces it."""

    start_event_id: str
    end_event_id: str
    summary: str
    invocation_ids: tuple[str, ...] = ()


LoopExitReason = Literal["escalated", "max_iterations", "invocation_ended"]


class LoopExit(_Frozen):
    """Why a loop agent stopped, after how many rounds (the last one possibly partial).

    `escalated`: a child escalated (`exit_loop`: the work converged). `max_iterations`:
    the cap was reached. `invocation_ended`: something ended the whole invocation.
    """

    reason: LoopExitReason
    iterations: int


class EventActions(_Frozen):
    """Side effects an event carries; the session service applies them on append."""

    state_delta: dict[str, Any] = Field(default_factory=dict)
    transfer_to_agent: str | None = None
    escalate: bool = False
    skip_summarization: bool = False
    compaction: CompactionInfo | None = None
    loop_exit: LoopExit | None = None


SHOWN_BEFORE = "shown_before"
"""`custom_metadata` key: the text a transport had already shown the customer in this
event's place (a streamed draft, then replaced by this reply or failure), so a summary
knows what the customer saw. Set by the transport; the runtime never reads it."""


class Event(_Frozen):
    """One immutable entry in a session's log.

    `id` is short and unique within the session (`e1`, `e2`, ...) so that a model can
    cite it; the session service assigns it on append. `author` is `user` or an agent
    name. `custom_metadata` is where whoever drives the runtime keeps its own data about
    the event (a transport's message id, say): the runtime stores it and never reads it.
    A `partial` event is a streamed text delta of the answer being written (ADK's
    `partial=True`): yielded to the caller as it arrives, never stored; the complete
    answer follows as an ordinary event.
    """

    id: str = ""
    invocation_id: str = ""
    author: str
    branch: str | None = None
    timestamp: float = Field(default_factory=time.time)
    parts: tuple[Part, ...] = ()
    actions: EventActions = Field(default_factory=EventActions)
    custom_metadata: Mapping[str, Any] = Field(default_factory=dict)
    usage: Usage | None = None
    model: str | None = None
    finish_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    partial: bool = False

    @property
    def text(self) -> str:
        """All text parts joined (empty when there are none)."""
        return "".join(p.text for p in self.parts if p.text)

    @property
    def function_calls(self) -> list[FunctionCall]:
        return [p.function_call for p in self.parts if p.function_call is not None]

    @property
    def function_responses(self) -> list[FunctionResponse]:
        return [p.function_response for p in self.parts if p.function_response is not None]

    @property
    def is_compaction(self) -> bool:
        return self.actions.compaction is not None

    @property
    def seq(self) -> int:
        """The numeric order of the event id (`e17` -> 17); 0 before it is assigned."""
        return event_seq(self.id)

    def with_metadata(self, **values: Any) -> Event:
        """A copy with `values` merged into `custom_metadata` (events are immutable)."""
        return self.model_copy(update={"custom_metadata": {**self.custom_metadata, **values}})

    def is_final_response(self) -> bool:
        """True when this event ends its agent's turn: text with no pending tool work."""
        if self.partial:
            return False
        if self.actions.skip_summarization:
            return True
        return not self.function_calls and not self.function_responses and not self.is_compaction


def latest_compaction(events: Sequence[Event]) -> tuple[Event, CompactionInfo] | None:
    """The most recent compaction event among `events`, with what it covers."""
    for event in reversed(events):
        if event.actions.compaction is not None:
            return event, event.actions.compaction
    return None


def event_seq(event_id: str) -> int:
    """Order key of a short event id such as `e17`; 0 for anything else."""
    if len(event_id) > 1 and event_id[0] == "e" and event_id[1:].isdigit():
        return int(event_id[1:])
    return 0


def new_invocation_id() -> str:
    return "inv-" + uuid.uuid4().hex[:16]


# What a call gets as its result when its invocation was stopped before the tool answered.
INTERRUPTED_RESPONSE: dict[str, Any] = {"error": "interrupted", "detail": "the run was stopped"}


def interrupted_responses(events: Sequence[Event]) -> list[Event]:
    """One event per function call among `events` that never got its response, answering
    it as interrupted (same author, invocation and branch as the call).

    A killed or cancelled run leaves such calls behind; compaction never closes a window
    over one, so without these answers a session would stop compacting for good.
    """
    answered = {r.id for e in events for r in e.function_responses}
    closing: list[Event] = []
    for event in events:
        parts = tuple(
            Part(
                function_response=FunctionResponse(
                    id=call.id, name=call.name, response=dict(INTERRUPTED_RESPONSE)
                )
            )
            for call in event.function_calls
            if call.id not in answered
        )
        if parts:
            closing.append(
                Event(
                    author=event.author,
                    invocation_id=event.invocation_id,
                    branch=event.branch,
                    parts=parts,
                )
            )
    return closing
