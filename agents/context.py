"""Contexts handed to agents, instructions and tools during one invocation."""

from __future__ import annotations

import dataclasses
from collections import ChainMap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agents.errors import ModelCallLimitExceeded
from agents.events import Event, Usage
from agents.history import ContentCache
from agents.invocation_log import InvocationLog
from agents.sessions.service import SessionService
from agents.sessions.session import Session
from agents.sessions.state import State

if TYPE_CHECKING:
    from agents.base_agent import BaseAgent
    from agents.callbacks import BasePlugin
    from agents.models.base import Model


class ModelCallBudget:
    """The per-invocation cap on model calls, shared by every branch and AgentTool child."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def spend(self, agent_name: str) -> None:
        if self.used >= self.limit:
            raise ModelCallLimitExceeded(self.limit, agent_name=agent_name)
        self.used += 1


@dataclass
class InvocationContext:
    """Everything one invocation shares; copied (shallowly) per agent and per branch."""

    session_service: SessionService
    session: Session
    invocation_id: str
    agent: BaseAgent
    user_event: Event | None
    budget: ModelCallBudget
    default_model: Model | None = None
    model_factory: Callable[[str], Model] | None = None
    branch: str | None = None
    temp_state: dict[str, Any] = field(default_factory=dict)
    end_invocation: bool = False
    # Runner-wide hooks (`agents.callbacks.BasePlugin`), shared by every agent and child.
    plugins: tuple[BasePlugin, ...] = ()
    # What the caller passed to `Runner.run_async` for this invocation; plugins read it
    # (a transport's message ids, say), the runtime never does.
    custom_metadata: dict[str, Any] = field(default_factory=dict)
    # A single message longer than this is clipped in model requests (`agents.history`).
    max_message_chars: int | None = None
    # Reply text streams as partial events (`agents.llm.streaming`).
    streaming: bool = False
    # Messages built from events for model requests (`agents.history`): the runner's.
    contents: ContentCache = field(default_factory=ContentCache)
    # What the invocation stored, logged in one line when it ends (`agents.invocation_log`).
    invocation_log: InvocationLog | None = None

    @property
    def app_name(self) -> str:
        return self.session.app_name

    @property
    def user_id(self) -> str:
        return self.session.user_id

    def for_agent(self, agent: BaseAgent, *, branch: str | None = None) -> InvocationContext:
        return dataclasses.replace(
            self, agent=agent, branch=self.branch if branch is None else branch
        )

    def state_view(self, delta: dict[str, Any] | None = None) -> State:
        """State as seen now: session state, this invocation's temp keys, then `delta`."""
        return State(ChainMap(self.temp_state, self.session.state), {} if delta is None else delta)


class ReadonlyContext:
    """What an instruction callable sees: read-only state and the invocation's identity."""

    def __init__(self, ctx: InvocationContext) -> None:
        self._ctx = ctx

    @property
    def state(self) -> dict[str, Any]:
        return self._ctx.state_view().to_dict()

    @property
    def agent_name(self) -> str:
        return self._ctx.agent.name

    @property
    def invocation_id(self) -> str:
        return self._ctx.invocation_id

    @property
    def user_id(self) -> str:
        return self._ctx.user_id

    @property
    def session_id(self) -> str:
        return self._ctx.session.id


@dataclass
class ToolActions:
    """Actions a tool may take; they land on the function-response event."""

    escalate: bool = False
    skip_summarization: bool = False
    transfer_to_agent: str | None = None
    model_use: dict[str, Usage] = field(default_factory=dict)
    """What the tool's own model calls used, by agent (`FunctionResponse.model_use`)."""


class ToolContext(ReadonlyContext):
    """What a tool receives: writable state, actions, and the call id."""

    def __init__(self, ctx: InvocationContext, function_call_id: str) -> None:
        super().__init__(ctx)
        self.function_call_id = function_call_id
        self.actions = ToolActions()
        self._state = ctx.state_view({})

    @property
    def state(self) -> State:  # type: ignore[override]
        return self._state

    @property
    def invocation_context(self) -> InvocationContext:
        return self._ctx
