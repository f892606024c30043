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
3. **The review** of a written answer, when a tool is left that was not called this
   turn. A tool whose tree entry says which replies need it first (`consult_before:
   promise ... a refund`) is a yes/no classification of the reply against that text:
   on a yes the reply is dropped, the tool is consulted and the reply is written again
   with its answer in view. The embedded Qwen 1.5B classifies well but seldom holds its
   own reply back when asked "send it, or consult a tool?" (in a probe it sent 4 of 4
   refund promises), so the question is put as a classification. Tools without
   `consult_before` get that older question: one constrained choice between sending the
   reply and consulting each of them, read against their descriptions.

How a choice is read is the model's `choice_scoring` (`agents.llm.choice_scores`).

The decision and the review carry no chat turns: the conversation is one fenced block
(`agents.llm.decision_transcript`) under the question, so the model classifies it
instead of answering it.

On such a model no step sees the bookkeeping of a hand-off (the `transfer_to_agent` call
and its result): a small model reading it writes about the transfer instead of answering.
Every step, in either mode, is checked for pretend actions (`agents.llm.pretend_actions`):
a reply that names a target or a tool becomes that transfer or call; a hand-off claim or
a recited instruction is asked for again once, then settled by a decision among the
actions only. Every call, the extra ones too, goes through the agent's model-call path:
it is spent from the invocation's model-call budget and passes the before/after model
callbacks and plugins (`agents.callbacks`), which see the decision and act requests.
Other models keep one call per step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.events import FunctionCall, Part, Usage
from agents.llm.choice_scores import (
    CONTENT_FREE,
    PRIORS,
    TOP_LOGPROBS,
    ChoiceScoring,
    calibrated,
    log_softmax,
    option_scores,
    pick,
)
from agents.llm.decision_observers import Decision, current_observers, observe_decisions
from agents.llm.decision_requests import (
    NO,
    YES,
    Choice,
    answer_request,
    arguments_request,
    consult_request,
    corrected_request,
    decision_request,
    find_json_object_any,
    parse_choice,
    reply_field,
    reply_request,
    review_request,
    unwrapped_reply,
    without_handoff_records,
)
from agents.llm.function_layout import NAME_KEY, function_names, functions_request
from agents.llm.pretend_actions import find_pretend_action, hands_off, without_pretence
from agents.llm.step_options import (
    StepOptions,
    choice_scoring,
    decision_layouts,
    step_options,
)
from agents.llm.transfer import TRANSFER_TOOL
from agents.llm.truncated_json import close_truncated_object
from agents.metrics import REGISTRY
from agents.models.base import (
    Content,
    DecisionLayout,
    LlmRequest,
    LlmResponse,
    Model,
    ModelError,
    ToolDeclaration,
)

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)

__all__ = [
    "Decision",
    "StepOptions",
    "decides_first",
    "observe_decisions",
    "respond",
    "step_options",
]


for _name, _help in (
    ("support_bot_tool_decisions_total", "Decide-first choices, by agent, kind and choice"),
    ("support_bot_pretend_actions_total", "Replies that pretended an action, by agent and fix"),
    ("support_bot_output_cut_total", "Model answers cut at their output budget, by agent"),
    ("support_bot_reviews_total", "Written replies held back to consult a tool, by agent"),
):
    REGISTRY.describe(_name, "counter", _help)


def decides_first(model: Model) -> bool:
    """Whether `model` takes a step with tools as a decision, then the act (see module)."""
    return bool(getattr(model, "decide_first", False))


async def respond(
    model: Model,
    request: LlmRequest,
    options: StepOptions,
    *,
    generate: Callable[[LlmRequest], Awaitable[LlmResponse]] | None = None,
) -> LlmResponse:
    """The step's response: text, a tool call or a transfer. Every model call of the step
    (the decision, the act, a re-ask) goes through `generate`, which the agent gives as its
    own model-call path (budget, before/after model callbacks and plugins), so the
    callbacks see each of these requests; default: `model.generate`."""
    if decides_first(model):
        request = without_handoff_records(request)
    scoring = choice_scoring(model) if decides_first(model) else "greedy"
    step = _Step(request, options, generate or model.generate, scoring, decision_layouts(model))
    if decides_first(model) and request.tools:
        response = await step.decide_and_act()
    else:
        response = await step.call(request)
    response = await step.without_pretence(response)
    if decides_first(model):
        response = await step.review(response)
    return response


class _Step:
    def __init__(
        self,
        request: LlmRequest,
        options: StepOptions,
        generate: Callable[[LlmRequest], Awaitable[LlmResponse]],
        scoring: ChoiceScoring = "greedy",
        layouts: Sequence[DecisionLayout] = ("question",),
    ) -> None:
        self.scoring = scoring
        self.layouts = tuple(layouts) or ("question",)
        self.request = request
        self.options = options
        self.generate = generate
        self.usage = Usage()
        self.reasked = False

    async def call(self, request: LlmRequest) -> LlmResponse:
        response = await self.generate(request)
        self.usage = self.usage + (response.usage or Usage()).model_copy(update={"calls": 1})
        if response.finish_reason == "length":
            REGISTRY.inc("support_bot_output_cut_total", agent=self.options.agent)
        return response

    def _done(self, response: LlmResponse) -> LlmResponse:
        return response.model_copy(update={"usage": self.usage})

    # -- decide, then act -------------------------------------------------------------

    async def decide_and_act(self) -> LlmResponse:
        choices = self.options.choices()
        if len(choices) == 1:
            return await self.answer()
        choice = await self.decide(choices)
        return await self.act(choice)

    async def decide(
        self,
        choices: Sequence[Choice],
        build: Callable[[LlmRequest], LlmRequest] | None = None,
        *,
        record: bool = True,
    ) -> Choice:
        """One of `choices`, asked by `build(step request)`, or by default in each of the
        model's decision layouts (`DECISION_LAYOUTS`), and read as `_read` says.
        `record`: counted and shown to the observers as a decision (a yes/no check is
        not)."""
        started = time.perf_counter()
        if build is not None:
            choice = await self._read(choices, [_Asked(build)], self.scoring)
        else:
            asked = [self._layout(layout, choices) for layout in self.layouts]
            scoring = self.scoring if len(asked) == 1 else _scoring_together(self.scoring)
            choice = await self._read(choices, asked, scoring)
        seconds = time.perf_counter() - started
        if not record:
            return choice
        REGISTRY.inc(
            "support_bot_tool_decisions_total",
            agent=self.options.agent,
            kind=choice.kind,
            choice=choice.name,
        )
        observers = current_observers.get()
        for notify in observers.decisions if observers else ():
            notify(Decision(self.options.agent, choice.name, choice.kind, seconds))
        return choice

    async def _read(
        self, choices: Sequence[Choice], asked: Sequence[_Asked], scoring: ChoiceScoring
    ) -> Choice:
        """The choice when the model is asked each way in `asked`. One way is read as
        `scoring` says (`agents.llm.choice_scores`). Several are each read by their
        log-probabilities (less their priors, when calibrating), as log-probabilities
        over these options alone, and added: where the ways disagree, the surer one wins.
        An answer without log-probabilities leaves the first way's constrained answer."""
        greedy: Choice | None = None
        total: dict[str, float] = {}
        for ask in asked:
            names = list(ask.names or [c.name for c in choices])
            request = self._scored(ask.build(self.request), scoring)
            response = await self.call(request)
            index = _picked_index(response.text, choices, names)
            greedy = greedy or choices[index]
            scores = option_scores(response.logprobs, names, key=ask.key)
            if scores is None or scoring == "greedy":
                return greedy
            if scoring == "calibrated":
                scores = calibrated(scores, await self._prior(ask, request, names))
            if len(asked) == 1:
                return choices[names.index(pick(scores, names[index]))]
            shares = log_softmax(scores)
            for choice, name in zip(choices, names, strict=True):
                total[choice.name] = total.get(choice.name, 0.0) + shares[name]
        assert greedy is not None
        best = pick(total, greedy.name)
        return next(c for c in choices if c.name == best)

    def _layout(self, layout: DecisionLayout, choices: Sequence[Choice]) -> _Asked:
        if layout == "functions":
            instruction = self.options.instruction
            return _Asked(
                lambda request: functions_request(
                    request, instruction=instruction, choices=choices
                ),
                names=tuple(function_names(choices)),
                key=NAME_KEY,
            )
        return _Asked(self._decision_builder(choices))

    def _decision_builder(self, choices: Sequence[Choice]) -> Callable[[LlmRequest], LlmRequest]:
        def build(request: LlmRequest) -> LlmRequest:
            return decision_request(
                request,
                agent=self.options.agent,
                instruction=self.options.instruction,
                choices=choices,
            )

        return build

    def _scored(self, request: LlmRequest, scoring: ChoiceScoring) -> LlmRequest:
        if scoring == "greedy":
            return request
        config = request.config.model_copy(update={"top_logprobs": TOP_LOGPROBS})
        return request.model_copy(update={"config": config})

    async def _prior(
        self, ask: _Asked, asked: LlmRequest, names: Sequence[str]
    ) -> dict[str, float] | None:
        """The options' scores for a content-free message under the same prompt: asked
        once per prompt and options, then kept (`PRIORS`)."""
        kept = PRIORS.get(asked.system_instruction, names)
        if kept is not None:
            return kept
        blank = Content(role="user", parts=(Part(text=CONTENT_FREE),))
        response = await self.call(
            self._scored(
                ask.build(self.request.model_copy(update={"contents": [blank]})), "logprobs"
            )
        )
        scores = option_scores(response.logprobs, names, key=ask.key)
        if scores is not None:
            PRIORS.put(asked.system_instruction, names, scores)
        return scores

    async def act(self, choice: Choice) -> LlmResponse:
        if choice.kind == "transfer":
            return self._done(
                _calls(FunctionCall(name=TRANSFER_TOOL, args={"agent_name": choice.name}))
            )
        if choice.kind == "tool":
            return await self.tool_call(choice.name)
        return await self.answer()

    async def answer(self) -> LlmResponse:
        return await self.call(answer_request(self.request, self.options.instruction))

    async def tool_call(self, name: str) -> LlmResponse:
        tool = next(t for t in self.options.tools if t.name == name)
        response = await self.call(arguments_request(self.request, self.options.instruction, tool))
        args = find_json_object_any(response.text)
        if args is None and response.finish_reason == "length":
            args = _closed_arguments(response.text, tool)
            if args is not None:
                logger.info("%s: arguments for %s were cut off; closed", self.options.agent, name)
        if args is None:
            raise ModelError(
                f"{self.options.agent}: arguments for {name} are not a JSON object: "
                f"{response.text!r:.200}",
                code="malformed_tool_call",
            )
        return self._done(
            response.model_copy(update={"parts": _calls(FunctionCall(name=name, args=args)).parts})
        )

    async def review(self, response: LlmResponse) -> LlmResponse:
        """A written reply, or the call of a tool it needs first. A tool whose tree entry
        says which replies need it (`consult_before`) is a yes/no check of the reply; the
        other tools not called this turn are one more decision, between sending it and
        each of them, read against their descriptions. The reply is dropped for the tool;
        the agent's next step answers with the tool's result in view."""
        tools = [c for c in self.options.choices(answer=False) if c.kind == "tool"]
        if not tools or response.function_calls or self.request.response_schema is not None:
            return self._done(response)
        if not response.text.strip():
            return self._done(response)
        declared = {t.name: t for t in self.options.tools}
        for choice in tools:
            tool = declared[choice.name]
            if tool.consult_before and await self._needs(tool, response.text):
                return await self._consult(tool.name)
        unmarked = [c for c in tools if not declared[c.name].consult_before]
        if not unmarked:
            return self._done(response)
        send = Choice(self.options.agent, "answer", "")
        choices = [send, *unmarked]

        def build(request: LlmRequest) -> LlmRequest:
            # A content-free request (calibration) gets a content-free draft as well.
            blank = request.contents and request.contents[-1].text == CONTENT_FREE
            return review_request(
                request,
                agent=self.options.agent,
                instruction=self.options.instruction,
                draft=CONTENT_FREE if blank else response.text,
                choices=choices,
            )

        choice = await self.decide(choices, build)
        if choice.kind != "tool":
            return self._done(response)
        return await self._consult(choice.name)

    async def _needs(self, tool: ToolDeclaration, draft: str) -> bool:
        """Whether `draft` does what `tool.consult_before` says needs the tool first."""
        choices = [Choice(YES, "tool", ""), Choice(NO, "answer", "")]

        def build(request: LlmRequest) -> LlmRequest:
            blank = request.contents and request.contents[-1].text == CONTENT_FREE
            return consult_request(
                request,
                instruction=self.options.instruction,
                draft=CONTENT_FREE if blank else draft,
                tool=tool,
            )

        return (await self.decide(choices, build, record=False)).name == YES

    async def _consult(self, name: str) -> LlmResponse:
        REGISTRY.inc("support_bot_reviews_total", agent=self.options.agent, tool=name)
        return await self.tool_call(name)

    # -- no pretend actions -----------------------------------------------------------

    async def without_pretence(self, response: LlmResponse) -> LlmResponse:
        """`response`, or the real action it pretended, or a fresh answer (see module)."""
        while True:
            if response.function_calls or self.request.response_schema is not None:
                return self._done(response)
            inner = unwrapped_reply(response.text)
            if inner is not None:
                response = response.model_copy(update={"parts": (Part(text=inner),)})
            options = self.options
            pretend = find_pretend_action(
                response.text,
                targets=[name for name, _ in options.targets],
                tools=[t.name for t in options.tools if t.name not in options.called],
                instruction=options.recital_source,
                others=options.unnamed,
            )
            if pretend is None:
                return self._done(response)
            observers = current_observers.get()
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
                    corrected_request(
                        answer_request(self.request, options.instruction), response.text
                    )
                )
                continue
            actions = options.choices(answer=False)
            if not actions or not hands_off(response.text):
                # Announced work or a recital: the agent meant to answer (its decision
                # said so); a decision among the actions alone would overrule that.
                kept = await self._without_action(response)
                if kept is not None:
                    return kept
            if not actions:
                self._count_pretend("failed")
                raise ModelError(
                    f"{options.agent} pretended an action it cannot take: {response.text!r:.200}",
                    code="pretend_action",
                )
            self._count_pretend("decided")
            return await self.act(await self.decide(actions))

    async def _without_action(self, response: LlmResponse) -> LlmResponse | None:
        """A reply with no action taken: `response` without its pretending sentences, if
        any are left; else, once, the reply asked for under a schema that only holds it
        (`reply_request`: a model primed by tool calls in its history keeps writing one
        as text, but filling a `reply` field it writes to the customer), without its
        pretending sentences; None when nothing is left."""
        kept = self._kept(response.text)
        if kept:
            self._count_pretend("cut")
            return self._done(response.model_copy(update={"parts": (Part(text=kept),)}))
        constrained = await self.call(reply_request(self.request, self.options.instruction))
        text = reply_field(constrained.text)
        if not text and constrained.finish_reason == "length":
            text = str((close_truncated_object(constrained.text) or {}).get("reply", ""))
        kept = self._kept(text.strip())
        if not kept:
            return None
        self._count_pretend("constrained")
        return self._done(constrained.model_copy(update={"parts": (Part(text=kept),)}))

    def _kept(self, text: str) -> str:
        """`text` without its pretending sentences ("" when nothing else is left)."""
        options = self.options
        return without_pretence(
            text,
            targets=[name for name, _ in options.targets],
            tools=[t.name for t in options.tools if t.name not in options.called],
            instruction=options.recital_source,
            others=options.unnamed,
        )

    def _count_pretend(self, fix: str) -> None:
        REGISTRY.inc("support_bot_pretend_actions_total", agent=self.options.agent, fix=fix)
        logger.info("pretend action by %s: %s", self.options.agent, fix)


def _closed_arguments(text: str, tool: ToolDeclaration) -> dict[str, Any] | None:
    """Arguments cut off at the output cap, closed where they stopped
    (`agents.llm.truncated_json`), if every required field then has a value: a string
    field must hold more than blanks. None otherwise (the turn fails as malformed)."""
    args = close_truncated_object(text)
    if args is None:
        return None
    required = (tool.parameters or {}).get("required", [])
    for field in required:
        value = args.get(field)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
    return args


def _calls(*calls: FunctionCall) -> LlmResponse:
    return LlmResponse(parts=tuple(Part(function_call=c) for c in calls))


@dataclass(frozen=True)
class _Asked:
    """One way of asking a decision: its request builder, the names its answer gives the
    options (in the choices' order; None: their own names), and the answer object's field
    that holds the name (None: the answer is the bare name)."""

    build: Callable[[LlmRequest], LlmRequest]
    names: tuple[str, ...] | None = None
    key: str | None = None


def _scoring_together(scoring: ChoiceScoring) -> ChoiceScoring:
    """Several layouts are read together by log-probabilities (calibrated, if asked)."""
    return "calibrated" if scoring == "calibrated" else "logprobs"


def _picked_index(text: str, choices: Sequence[Choice], names: Sequence[str]) -> int:
    """The index of the option the constrained answer `text` names (`parse_choice`)."""
    renamed = [Choice(n, c.kind, c.description) for c, n in zip(choices, names, strict=True)]
    return renamed.index(parse_choice(text, renamed))
