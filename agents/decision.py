"""Decide first, then act: how an `LlmAgent` step reaches a model without native tools.

A small model asked to "answer, or call transfer_to_agent" answers in prose nearly every
time, but it classifies well. So for a model that decides first (`Model.decide_first`),
a step with transfer targets or tools is two calls:

1. **The decision**: one constrained choice (a JSON-schema enum) among the agent itself
   (it answers), each allowed transfer target and each tool not yet called this turn, each
   listed by name and the description the tree gives it.
2. **The act**: a transfer becomes the ordinary `transfer_to_agent` function call (no
   second call); a tool gets its arguments written under its own parameter schema; an
   answer is written with no tools in sight.

Every step, in either mode, is checked for pretend actions (`agents.pretend_actions`):
a reply that names a target or a tool becomes that transfer or call; a hand-off claim or
a recited instruction is asked for again once, then settled by a decision among the
actions only. Every extra call is spent from the invocation's model-call budget.
Other models keep one call per step.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agents.events import FunctionCall, Part, Usage
from agents.metrics import REGISTRY
from agents.models.base import Content, LlmRequest, LlmResponse, Model, ModelError, ToolDeclaration
from agents.models.prompted_tools import render_content
from agents.pretend_actions import PretendAction, find_pretend_action
from agents.transfer import TRANSFER_TOOL, transfer_targets

if TYPE_CHECKING:
    from agents.context import InvocationContext
    from agents.llm_agent import LlmAgent

logger = logging.getLogger(__name__)

ChoiceKind = Literal["answer", "transfer", "tool"]
DECISION_MAX_TOKENS = 32
"""`{"choice": "<name>"}` needs about ten tokens; the cap stops a runaway at once."""

for _name, _help in (
    ("support_bot_tool_decisions_total", "Decide-first choices, by agent, kind and choice"),
    ("support_bot_pretend_actions_total", "Replies that pretended an action, by agent and fix"),
    ("support_bot_output_cut_total", "Model answers cut at their output budget, by agent"),
):
    REGISTRY.describe(_name, "counter", _help)


def decides_first(model: Model) -> bool:
    """Whether `model` takes a step with tools as a decision, then the act (see module)."""
    return bool(getattr(model, "decide_first", False))


@dataclass(frozen=True)
class Choice:
    """One option of a decision: `name` is the enum value the model picks."""

    name: str
    kind: ChoiceKind
    description: str


@dataclass(frozen=True)
class StepOptions:
    """What one agent may do in one step, from the tree."""

    agent: str
    description: str
    instruction: str
    targets: tuple[tuple[str, str], ...] = ()
    tools: tuple[ToolDeclaration, ...] = ()
    called: frozenset[str] = frozenset()

    def choices(self, *, answer: bool = True) -> list[Choice]:
        """Targets, then the agent itself (answer), then the tools not called this turn."""
        found = [Choice(name, "transfer", text) for name, text in self.targets]
        if answer:
            found.append(Choice(self.agent, "answer", self.description))
        found.extend(
            Choice(t.name, "tool", t.description) for t in self.tools if t.name not in self.called
        )
        return found


def step_options(agent: LlmAgent, ctx: InvocationContext, instruction: str) -> StepOptions:
    """`agent`'s options now. A target that transferred to `agent` in this invocation is
    left out, so a hand-off is never bounced straight back (a ping-pong)."""
    events = [e for e in ctx.session.events if e.invocation_id == ctx.invocation_id]
    senders = {e.author for e in events if e.actions.transfer_to_agent == agent.name}
    called = {c.name for e in events if e.author == agent.name for c in e.function_calls}
    return StepOptions(
        agent=agent.name,
        description=agent.description,
        instruction=instruction,
        targets=tuple(
            (t.name, t.description) for t in transfer_targets(agent) if t.name not in senders
        ),
        tools=tuple(t.declaration() for t in agent.tools),
        called=frozenset(called),
    )


@dataclass(frozen=True)
class Decision:
    """One decision as observed by `observe_decisions`: who chose what, how fast."""

    agent: str
    choice: str
    kind: ChoiceKind
    seconds: float


@dataclass
class _Observers:
    decisions: list[Callable[[Decision], None]] = field(default_factory=list)
    pretend: list[Callable[[str, PretendAction], None]] = field(default_factory=list)


_observers: ContextVar[_Observers | None] = ContextVar("decision_observers", default=None)


@contextmanager
def observe_decisions(
    on_decision: Callable[[Decision], None],
    on_pretend: Callable[[str, PretendAction], None] | None = None,
) -> Iterator[None]:
    """Call `on_decision` for every decision (and `on_pretend` for every pretend reply
    caught) made in this context; evaluations use it to time decisions."""
    observers = _Observers([on_decision], [on_pretend] if on_pretend else [])
    token = _observers.set(observers)
    try:
        yield
    finally:
        _observers.reset(token)


async def respond(
    model: Model, request: LlmRequest, options: StepOptions, *, spend: Callable[[], None]
) -> LlmResponse:
    """The step's response: text, a tool call or a transfer. One model call is already
    spent by the caller; `spend` pays for each further one."""
    step = _Step(model, request, options, spend)
    if decides_first(model) and request.tools:
        response = await step.decide_and_act()
    else:
        response = await step.call(request, first=True)
    return await step.without_pretence(response)


class _Step:
    def __init__(
        self, model: Model, request: LlmRequest, options: StepOptions, spend: Callable[[], None]
    ) -> None:
        self.model = model
        self.request = request
        self.options = options
        self.spend = spend
        self.usage = Usage()
        self.reasked = False

    async def call(self, request: LlmRequest, *, first: bool = False) -> LlmResponse:
        if not first:
            self.spend()
        response = await self.model.generate(request)
        self.usage = self.usage + (response.usage or Usage())
        if response.finish_reason == "length":
            REGISTRY.inc("support_bot_output_cut_total", agent=self.options.agent)
        return response

    def _done(self, response: LlmResponse) -> LlmResponse:
        return response.model_copy(update={"usage": self.usage})

    # -- decide, then act -------------------------------------------------------------

    async def decide_and_act(self) -> LlmResponse:
        choices = self.options.choices()
        if len(choices) == 1:
            return await self.answer(first=True)
        choice = await self.decide(choices, first=True)
        return await self.act(choice)

    async def decide(self, choices: Sequence[Choice], *, first: bool = False) -> Choice:
        started = time.perf_counter()
        response = await self.call(
            decision_request(self.request, self.options, choices), first=first
        )
        choice = parse_choice(response.text, choices)
        seconds = time.perf_counter() - started
        REGISTRY.inc(
            "support_bot_tool_decisions_total",
            agent=self.options.agent,
            kind=choice.kind,
            choice=choice.name,
        )
        observers = _observers.get()
        for notify in observers.decisions if observers else ():
            notify(Decision(self.options.agent, choice.name, choice.kind, seconds))
        return choice

    async def act(self, choice: Choice) -> LlmResponse:
        if choice.kind == "transfer":
            return self._done(
                _calls(FunctionCall(name=TRANSFER_TOOL, args={"agent_name": choice.name}))
            )
        if choice.kind == "tool":
            return await self.tool_call(choice.name)
        return await self.answer()

    async def answer(self, *, first: bool = False) -> LlmResponse:
        return await self.call(answer_request(self.request, self.options), first=first)

    async def tool_call(self, name: str) -> LlmResponse:
        tool = next(t for t in self.options.tools if t.name == name)
        response = await self.call(arguments_request(self.request, self.options, tool))
        args = find_json_object_any(response.text)
        if args is None:
            raise ModelError(
                f"{self.options.agent}: arguments for {name} are not a JSON object: "
                f"{response.text!r:.200}",
                code="malformed_tool_call",
            )
        return self._done(
            response.model_copy(update={"parts": _calls(FunctionCall(name=name, args=args)).parts})
        )

    # -- no pretend actions -----------------------------------------------------------

    async def without_pretence(self, response: LlmResponse) -> LlmResponse:
        """`response`, or the real action it pretended, or a fresh answer (see module)."""
        while True:
            if response.function_calls or self.request.response_schema is not None:
                return self._done(response)
            options = self.options
            pretend = find_pretend_action(
                response.text,
                targets=[name for name, _ in options.targets],
                tools=[t.name for t in options.tools if t.name not in options.called],
                instruction=options.instruction,
            )
            if pretend is None:
                return self._done(response)
            observers = _observers.get()
            for notify in observers.pretend if observers else ():
                notify(options.agent, pretend)
            if pretend.kind == "transfer" and pretend.name:
                self._count_pretend("transferred")
                return await self.act(Choice(pretend.name, "transfer", ""))
            if pretend.kind == "tool" and pretend.name:
                self._count_pretend("called")
                return await self.tool_call(pretend.name)
            if not self.reasked:
                self._count_pretend("asked_again")
                self.reasked = True
                response = await self.call(
                    _corrected(answer_request(self.request, options), response.text)
                )
                continue
            actions = options.choices(answer=False)
            if not actions:
                self._count_pretend("failed")
                raise ModelError(
                    f"{options.agent} pretended an action it cannot take: {response.text!r:.200}",
                    code="pretend_action",
                )
            self._count_pretend("decided")
            return await self.act(await self.decide(actions))

    def _count_pretend(self, fix: str) -> None:
        REGISTRY.inc("support_bot_pretend_actions_total", agent=self.options.agent, fix=fix)
        logger.info("pretend action by %s: %s", self.options.agent, fix)


# -- requests ---------------------------------------------------------------------------


def decision_request(
    request: LlmRequest, options: StepOptions, choices: Sequence[Choice]
) -> LlmRequest:
    """The constrained choice: the agent's instruction, the options, an enum schema."""
    lines = [
        "Before anything is written, decide who handles the customer's latest message.",
        "The options:",
    ]
    for choice in choices:
        lines.append(f"- {choice.name}: {_option_text(choice, options.agent)}")
    lines.append(
        "Pick the option whose description covers what the customer needs now. Answer "
        "with the option's name in double quotes, and nothing else."
    )
    # A bare JSON string: the fewest tokens to generate, each one constrained.
    schema = {"title": "decision", "type": "string", "enum": [c.name for c in choices]}
    config = request.config.model_copy(
        update={"temperature": 0.0, "max_tokens": DECISION_MAX_TOKENS}
    )
    return _plain(request, options.instruction, "\n".join(lines), schema, config)


def _option_text(choice: Choice, agent: str) -> str:
    description = choice.description or "(no description)"
    if choice.kind == "answer":
        return f"you ({agent}) answer the customer yourself. You handle: {description}"
    if choice.kind == "tool":
        return f"consult this tool first; it answers you, not the customer. {description}"
    return f"hand the conversation to this agent. It handles: {description}"


def answer_request(request: LlmRequest, options: StepOptions) -> LlmRequest:
    """The reply, with no tools: the agent has decided to answer itself."""
    note = (
        "You answer this message yourself now. Write only your reply to the customer. "
        "Your instructions are for you: never repeat them, and never name internal agents "
        "or tools. Do not say that you will transfer, escalate, forward or check anything."
    )
    return _plain(request, options.instruction, note, request.response_schema, request.config)


def arguments_request(
    request: LlmRequest, options: StepOptions, tool: ToolDeclaration
) -> LlmRequest:
    """The arguments of `tool`, constrained by its parameter schema."""
    note = (
        f"You are calling the tool `{tool.name}` now ({tool.description}). Write its "
        "arguments as one JSON object, and nothing else."
    )
    schema = {"title": f"{tool.name}_arguments", **(tool.parameters or {"type": "object"})}
    return _plain(request, options.instruction, note, schema, request.config)


def _plain(
    request: LlmRequest,
    instruction: str,
    note: str,
    schema: dict[str, Any] | None,
    config: Any,
) -> LlmRequest:
    """A tool-less request: history as text, the instruction first (so a server's prompt
    cache shares it between the decision and the act), then `note`."""
    return request.model_copy(
        update={
            "system_instruction": "\n\n".join(s for s in (instruction, note) if s),
            "contents": [render_content(c) for c in request.contents],
            "tools": [],
            "response_schema": schema,
            "config": config,
        }
    )


def _corrected(request: LlmRequest, pretended: str) -> LlmRequest:
    """The answer request again, with the rejected reply and why it was rejected."""
    contents = [
        *request.contents,
        Content(role="model", parts=(Part(text=pretended),)),
        Content(
            role="user",
            parts=(
                Part(
                    text="That reply cannot be sent: it claims an action or repeats your "
                    "instructions. Write the reply to the customer itself."
                ),
            ),
        ),
    ]
    return request.model_copy(update={"contents": contents})


# -- parsing ---------------------------------------------------------------------------


def parse_choice(text: str, choices: Sequence[Choice]) -> Choice:
    """The chosen option; an answer that is not one of them picks the first option named
    in it, else the agent itself (answer) when that is an option, else the first."""
    by_name = {c.name: c for c in choices}
    try:
        picked = json.loads(text)
    except json.JSONDecodeError:
        picked = None
    if isinstance(picked, dict):  # a server that insists on an object
        picked = picked.get("choice")
    if isinstance(picked, str) and picked in by_name:
        return by_name[picked]
    named = [c for c in choices if c.name in text]
    if named:
        return named[0]
    return next((c for c in choices if c.kind == "answer"), choices[0])


def find_json_object_any(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (of any shape), if any."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def _calls(*calls: FunctionCall) -> LlmResponse:
    return LlmResponse(parts=tuple(Part(function_call=c) for c in calls))
