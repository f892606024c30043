"""Callbacks and plugins: hooks around each agent, model call, tool call and run (as in ADK).

Agent callbacks are set on one agent (`before_agent_callback=...`); plugins are given to
the `Runner` and apply to every agent, including agents consulted through AgentTool.
Each hook may be sync or async. A `before_*` hook that returns a value replaces the
step: text instead of running the agent, an `LlmResponse` instead of calling the model,
a dict instead of running the tool. An `after_*` hook that returns a value replaces the
step's result. Plugins run first, in order; the first hook that returns a value wins and
the rest (later plugins, then the agent's own callbacks) are skipped. `on_user_message`
and `on_event` are the exception: each plugin receives the previous plugin's event, so
several plugins can each stamp their own `custom_metadata` keys.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, Union

from agents.context import InvocationContext, ReadonlyContext, ToolContext
from agents.events import Event
from agents.models.base import LlmRequest, LlmResponse

if TYPE_CHECKING:
    from agents.base_agent import BaseAgent
    from agents.tools.base_tool import BaseTool

T = TypeVar("T")
MaybeAwaitable = Union[T, Awaitable[T]]  # noqa: UP007 (a generic alias needs Union)

AgentCallback = Callable[["CallbackContext"], MaybeAwaitable[str | None]]
BeforeModelCallback = Callable[["CallbackContext", LlmRequest], MaybeAwaitable[LlmResponse | None]]
AfterModelCallback = Callable[["CallbackContext", LlmResponse], MaybeAwaitable[LlmResponse | None]]
BeforeToolCallback = Callable[
    ["BaseTool", dict[str, Any], ToolContext], MaybeAwaitable[dict[str, Any] | None]
]
AfterToolCallback = Callable[
    ["BaseTool", dict[str, Any], ToolContext, dict[str, Any]],
    MaybeAwaitable[dict[str, Any] | None],
]


class CallbackContext(ReadonlyContext):
    """What an agent or model callback sees: read-only state and the invocation."""

    @property
    def invocation_context(self) -> InvocationContext:
        return self._ctx

    @property
    def user_event(self) -> Event | None:
        return self._ctx.user_event

    @property
    def custom_metadata(self) -> dict[str, Any]:
        """The metadata the caller passed to `Runner.run_async` for this invocation."""
        return self._ctx.custom_metadata


class BasePlugin:
    """Runner-wide hooks; override the ones you need (each default does nothing)."""

    name: str = "plugin"

    async def before_run(self, ctx: InvocationContext) -> str | None:
        """Before the agent runs; returned text ends the invocation as the answer."""
        return None

    async def on_user_message(self, ctx: InvocationContext, event: Event) -> Event | None:
        """The user's event before it is stored; a returned event is stored instead."""
        return None

    async def on_event(self, ctx: InvocationContext, event: Event) -> Event | None:
        """Each event the invocation produces, before it is stored; may return a replacement."""
        return None

    async def after_run(self, ctx: InvocationContext) -> None:
        """After the invocation's last event is stored."""
        return None

    async def before_agent(self, agent: BaseAgent, ctx: CallbackContext) -> str | None:
        return None

    async def after_agent(self, agent: BaseAgent, ctx: CallbackContext) -> str | None:
        return None

    async def before_model(self, ctx: CallbackContext, request: LlmRequest) -> LlmResponse | None:
        return None

    async def after_model(self, ctx: CallbackContext, response: LlmResponse) -> LlmResponse | None:
        return None

    async def before_tool(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        return None

    async def after_tool(
        self,
        tool: BaseTool,
        args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        return None


def as_list(callbacks: Callable[..., Any] | Sequence[Callable[..., Any]] | None) -> list[Any]:
    """An agent's callback argument (none, one, or several) as a list."""
    if callbacks is None:
        return []
    if callable(callbacks):
        return [callbacks]
    return list(callbacks)


async def _value(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


async def first_result(
    plugin_hooks: Sequence[Callable[..., Any]], own: Sequence[Callable[..., Any]], *args: Any
) -> Any:
    """Call plugin hooks, then the agent's own, until one returns something other than None."""
    for hook in (*plugin_hooks, *own):
        result = await _value(hook(*args))
        if result is not None:
            return result
    return None


async def chain_events(
    hooks: Sequence[Callable[[InvocationContext, Event], Awaitable[Event | None]]],
    ctx: InvocationContext,
    event: Event,
) -> Event:
    """Pass `event` through each plugin's hook; each may replace it."""
    for hook in hooks:
        event = await hook(ctx, event) or event
    return event
