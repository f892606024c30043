"""The runner: one user message in, a stream of persisted events out."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing, nullcontext
from functools import cache
from typing import Any

from agents.base_agent import BaseAgent
from agents.callbacks import BasePlugin, chain_events
from agents.context import InvocationContext, ModelCallBudget
from agents.errors import AgentRuntimeError, SessionStoreError
from agents.events import Event, Part, interrupted_responses, new_invocation_id
from agents.history import ContentCache
from agents.invocation import persist, record_event, run_and_persist
from agents.invocation_log import InvocationLog
from agents.llm.agent import LlmAgent
from agents.metrics import REGISTRY, count_event_model_use
from agents.models.base import Model, ModelError
from agents.models.slot import ModelSlot
from agents.sessions.service import SessionNotFoundError, SessionService, TransactionWrite
from agents.sessions.session import Session

logger = logging.getLogger(__name__)

AfterInvocationHook = Callable[[Session, str], Awaitable[None]]

MODEL_FAILURE_TEXT = (
    "I couldn't finish answering this because the model service failed. "
    "Your message is saved and a person will follow up."
)
EMPTY_MESSAGE_TEXT = "Your message was empty. What can I help you with?"
INTERNAL_FAILURE_TEXT = (
    "I couldn't finish answering this because of an internal error. "
    "Your message is saved and a person will follow up."
)


def default_model_factory(name: str) -> Model:
    """Resolve a litellm model string (imported lazily: litellm is slow to import)."""
    from agents.models.litellm_model import LiteLlmModel

    return LiteLlmModel(name)


class Runner:
    """Runs invocations of an agent tree over a `SessionService`.

    Each event is persisted as it is produced. The agent that answers is chosen by the
    transfer history (see `find_agent_to_run`). Model and runtime failures end the
    invocation with a final event whose `error_code` says what happened, after an
    "interrupted" result for each function call they cut off; they never escape
    `run_async`; only a `SessionStoreError` does, since nothing can be stored.
    `plugins` (see `agents.callbacks`) hook into every run, agent, model and tool call.
    `max_message_chars`, when set, bounds any one message in a model request
    (`agents.history`); unset, messages go whole (the summariser budgets its own prompt).
    After an invocation completes, the after-invocation hooks (compaction, say) run in
    background tasks, off the reply path. With `model_slot` (a model that serves one
    request at a time), each invocation holds it as a customer's turn while it runs, so
    background calls on that model yield to it (`agents.models.slot`).
    """

    def __init__(
        self,
        *,
        agent: BaseAgent,
        app_name: str,
        session_service: SessionService,
        default_model: Model | None = None,
        model_factory: Callable[[str], Model] | None = None,
        after_invocation: Sequence[AfterInvocationHook] = (),
        max_model_calls: int = 25,
        plugins: Sequence[BasePlugin] = (),
        max_message_chars: int | None = None,
        model_slot: ModelSlot | None = None,
    ) -> None:
        self.agent = agent
        self.app_name = app_name
        self.session_service = session_service
        self.default_model = default_model
        self.model_factory = cache(model_factory or default_model_factory)
        self.after_invocation = list(after_invocation)
        self.max_model_calls = max_model_calls
        self.plugins = tuple(plugins)
        self.max_message_chars = max_message_chars
        self.model_slot = model_slot
        # Model messages built from events, shared by every invocation (`agents.history`).
        self.contents = ContentCache()
        self._background: set[asyncio.Task[None]] = set()

    async def run_async(
        self,
        *,
        user_id: str,
        session_id: str,
        message: str,
        custom_metadata: Mapping[str, Any] | None = None,
        invocation_id: str | None = None,
        streaming: bool = False,
        with_user_event: TransactionWrite | None = None,
    ) -> AsyncIterator[Event]:
        """Append the user's message, then run the chosen agent, yielding its events.

        `custom_metadata` belongs to the caller (a transport's message ids, say): the
        plugins read it from the invocation context and stamp what they need on events.
        With `streaming`, reply text also comes as partial events while it is written
        (`agents.llm.streaming`); they are never stored, and every event a run without
        streaming yields is yielded, and stored, the same. With a `model_slot`, the whole
        run is a customer's turn on it.
        """
        run = self._run(
            user_id=user_id,
            session_id=session_id,
            message=message,
            custom_metadata=custom_metadata,
            invocation_id=invocation_id,
            streaming=streaming,
            with_user_event=with_user_event,
        )
        turn = nullcontext() if self.model_slot is None else self.model_slot.turn()
        async with turn, aclosing(run):
            async for event in run:
                yield event

    async def _run(
        self,
        *,
        user_id: str,
        session_id: str,
        message: str,
        custom_metadata: Mapping[str, Any] | None,
        invocation_id: str | None,
        streaming: bool,
        with_user_event: TransactionWrite | None,
    ) -> AsyncGenerator[Event, None]:
        session = await self.session_service.get_session(
            app_name=self.app_name, user_id=user_id, session_id=session_id, since_compaction=True
        )
        if session is None:
            raise SessionNotFoundError(session_id)
        invocation_id = invocation_id or new_invocation_id()
        # Lone surrogates (from broken clients) cannot be encoded for storage or a model.
        message = message.encode("utf-8", errors="replace").decode("utf-8")
        ctx = InvocationContext(
            session_service=self.session_service,
            session=session,
            invocation_id=invocation_id,
            agent=self.agent,
            user_event=None,
            budget=ModelCallBudget(self.max_model_calls),
            default_model=self.default_model,
            model_factory=self.model_factory,
            plugins=self.plugins,
            custom_metadata=dict(custom_metadata or {}),
            max_message_chars=self.max_message_chars,
            streaming=streaming,
            contents=self.contents,
        )
        ctx.invocation_log = log = InvocationLog(invocation_id, session.id)
        outcome = "raised"
        try:
            user_event = Event(
                author="user", invocation_id=invocation_id, parts=(Part(text=message),)
            )
            if self.plugins:
                hooks = [p.on_user_message for p in self.plugins]
                user_event = await chain_events(hooks, ctx, user_event)
            ctx.user_event = await self.session_service.append_event(
                session, user_event, along=with_user_event
            )
            record_event(ctx, ctx.user_event)
            ctx.agent = agent = find_agent_to_run(session, self.agent)
            REGISTRY.inc("support_bot_invocations_total")
            current = agent.name
            if not message.strip():
                yield await self._error_event(
                    ctx, current, "empty_message", "empty user message", EMPTY_MESSAGE_TEXT
                )
                outcome = "completed"
                return
            failure: tuple[str, str, str, str] | None = None
            try:
                async for event in self._run_agent(agent, ctx):
                    current = event.author
                    count_event_model_use(event)
                    yield event
            except AssertionError:
                raise
            except AgentRuntimeError as exc:
                failure = (exc.agent_name or current, exc.code, str(exc), exc.user_message)
            except ModelError as exc:
                failure = (current, exc.code, str(exc), MODEL_FAILURE_TEXT)
            except SessionStoreError:
                raise  # the caller must tell the person the turn failed: nothing can be stored
            except Exception as exc:
                logger.exception("invocation %s failed", invocation_id)
                failure = (
                    current,
                    "internal_error",
                    f"{type(exc).__name__}: {exc}",
                    INTERNAL_FAILURE_TEXT,
                )
            if failure is not None:
                # A call the failure cut off (a limit hit inside an AgentTool, say) is answered
                # as interrupted, as after a kill, so compaction can close a window over it.
                mine = [e for e in session.events if e.invocation_id == invocation_id]
                for closing in interrupted_responses(mine):
                    yield await persist(ctx, closing)
                yield await self._error_event(ctx, *failure)
            for plugin in self.plugins:
                await plugin.after_run(ctx)
            self._schedule_hooks(session, invocation_id)
            outcome = "completed"
        except GeneratorExit:
            outcome = "closed"
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            log.finish(outcome)

    async def _run_agent(self, agent: BaseAgent, ctx: InvocationContext) -> AsyncIterator[Event]:
        """The agent's events; a plugin's `before_run` text answers in its place."""
        for plugin in self.plugins:
            text = await plugin.before_run(ctx)
            if text is not None:
                answer = Event(
                    invocation_id=ctx.invocation_id, author=agent.name, parts=(Part(text=text),)
                )
                yield await persist(ctx, answer)
                return
        async for event in run_and_persist(agent, ctx):
            yield event

    async def _error_event(
        self, ctx: InvocationContext, author: str, code: str, detail: str, text: str
    ) -> Event:
        logger.warning("invocation %s ended with %s: %s", ctx.invocation_id, code, detail)
        event = Event(
            invocation_id=ctx.invocation_id,
            author=author,
            branch=None,
            parts=(Part(text=text),),
            error_code=code,
            error_message=detail[:2000],
        )
        return await persist(ctx, event)

    def _schedule_hooks(self, session: Session, invocation_id: str) -> None:
        if not self.after_invocation:
            return
        task = asyncio.create_task(self._run_hooks(session, invocation_id))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _run_hooks(self, session: Session, invocation_id: str) -> None:
        for hook in self.after_invocation:
            try:
                await hook(session, invocation_id)
            except Exception:
                logger.warning("after-invocation hook %r failed", hook, exc_info=True)

    async def drain(self) -> None:
        """Wait for every after-invocation hook scheduled so far."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)


def find_agent_to_run(session: Session, root: BaseAgent) -> BaseAgent:
    """Pick who answers the next user message.

    A pending function call goes back to the agent that made it. Otherwise the most
    recent non-user author whose whole chain to the root is LLM agents that allow
    transfer to their parent answers; steps inside workflow agents never qualify. If
    none does, the root answers.
    """
    answered = {r.id for e in session.events for r in e.function_responses}
    for event in reversed(session.events):
        if event.author == "user" or event.is_compaction:
            continue
        pending = [c for c in event.function_calls if c.id not in answered]
        if pending and (agent := root.find_agent(event.author)) is not None:
            return agent
        break
    for event in reversed(session.events):
        if event.author == "user" or event.is_compaction:
            continue
        if event.author == root.name:
            return root
        agent = root.find_agent(event.author)
        if agent is None and event.actions.transfer_to_agent:
            # A hand-off record, authored by no agent, names the agent it hands to.
            agent = root.find_agent(event.actions.transfer_to_agent)
        if agent is not None and resumable(agent):
            return agent
    return root


def resumable(agent: BaseAgent) -> bool:
    """True when `agent` keeps the conversation after its turn (`find_agent_to_run`'s
    rule): it and every agent above it are LLM agents that allow transfer to their parent."""
    node: BaseAgent | None = agent
    while node is not None:
        if not isinstance(node, LlmAgent) or node.disallow_transfer_to_parent:
            return False
        node = node.parent
        if node is not None and node.parent is None:
            return isinstance(node, LlmAgent)
    return True


def reply_owner(agent: BaseAgent) -> BaseAgent:
    """The agent that owns what `agent` writes: `agent` itself, or for a step of a
    workflow agent (a pipeline's `fix_writer`), the outermost workflow agent it runs in
    under an LLM agent (`tech_support`). A step never owns a conversation."""
    owner = agent
    node = agent
    while node.parent is not None and not isinstance(node.parent, LlmAgent):
        node = node.parent
        owner = node
    return owner


def reply_owner_name(root: BaseAgent, author: str) -> str:
    """The name of the agent that owns what `author` (an agent of the tree under `root`)
    writes (`reply_owner`): what a reply is shown and recorded as. A name the tree does
    not hold is its own owner."""
    agent = root.find_agent(author)
    return reply_owner(agent).name if agent is not None else author
