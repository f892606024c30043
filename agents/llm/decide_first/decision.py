"""The decision of a decide-first step: one constrained choice among options, asked in
each of the model's decision layouts and read as its choice scoring says.

The question layout (`prompts.decision_request`) carries no chat turns: the conversation
is one fenced block (`agents.llm.decide_first.transcript`) under the question, so the
model classifies it instead of answering it. The functions layout
(`agents.llm.decide_first.function_layout`) lists the options as function signatures.
How a choice is read is the profile's `choice_scoring`
(`agents.llm.decide_first.choice_scores`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents.events import Part
from agents.llm.decide_first.choice_scores import (
    CONTENT_FREE,
    PRIORS,
    TOP_LOGPROBS,
    calibrated,
    log_softmax,
    option_scores,
    pick,
)
from agents.llm.decide_first.choices import Choice, parse_choice
from agents.llm.decide_first.function_layout import NAME_KEY, function_names, functions_request
from agents.llm.decide_first.observers import Decision, current_observers
from agents.llm.decide_first.prompts import decision_request
from agents.llm.decide_first.step import Step
from agents.llm.decide_first.transcript import latest_message
from agents.llm.example_vote import fused
from agents.metrics import REGISTRY
from agents.models.base import Content, LlmRequest
from agents.models.profile import ChoiceScoring, DecisionLayout

REGISTRY.describe(
    "support_bot_tool_decisions_total", "counter", "Decide-first choices, by agent, kind and choice"
)


async def decide(
    step: Step,
    choices: Sequence[Choice],
    build: Callable[[LlmRequest], LlmRequest] | None = None,
    *,
    record: bool = True,
) -> Choice:
    """One of `choices`, asked by `build(step request)`, or by default in each of the
    model's decision layouts (`ModelProfile.decision_layouts`), and read as `_read` says.
    `record`: counted and shown to the observers as a decision (a yes/no check is
    not)."""
    started = time.perf_counter()
    if build is not None:
        choice, unvoted = await _read(step, choices, [_Asked(build)], step.scoring)
    else:
        asked = [_layout(step, layout, choices) for layout in step.layouts]
        scoring = step.scoring if len(asked) == 1 else _scoring_together(step.scoring)
        choice, unvoted = await _read(step, choices, asked, scoring, vote=True)
    seconds = time.perf_counter() - started
    if not record:
        return choice
    REGISTRY.inc(
        "support_bot_tool_decisions_total",
        agent=step.options.agent,
        kind=choice.kind,
        choice=choice.name,
    )
    observers = current_observers.get()
    for notify in observers.decisions if observers else ():
        notify(Decision(step.options.agent, choice.name, choice.kind, seconds, unvoted))
    return choice


async def _read(
    step: Step,
    choices: Sequence[Choice],
    asked: Sequence[_Asked],
    scoring: ChoiceScoring,
    *,
    vote: bool = False,
) -> tuple[Choice, str]:
    """The choice when the model is asked each way in `asked`. One way is read as
    `scoring` says (`agents.llm.decide_first.choice_scores`). Several are each read by
    their log-probabilities (less their priors, when calibrating), as log-probabilities
    over these options alone, and averaged: where the ways disagree, the surer one wins.
    With `vote`, the examples' vote is added to the log-probabilities
    (`agents.llm.example_vote`). An answer without log-probabilities leaves the first
    way's constrained answer: a vote needs the model's sureness to weigh against. Returns
    the choice and the name the model chose before the vote."""
    greedy: Choice | None = None
    total: dict[str, float] = {}
    for ask in asked:
        names = list(ask.names or [c.name for c in choices])
        request = _scored(ask.build(step.request), scoring)
        response = await step.call(request)
        index = _picked_index(response.text, choices, names)
        greedy = greedy or choices[index]
        scores = option_scores(response.logprobs, names, key=ask.key)
        if scores is None or scoring == "greedy":
            return greedy, greedy.name
        if scoring == "calibrated":
            scores = calibrated(scores, await _prior(step, ask, request, names))
        shares = log_softmax(scores)
        for choice, name in zip(choices, names, strict=True):
            total[choice.name] = total.get(choice.name, 0.0) + shares[name] / len(asked)
    assert greedy is not None
    unvoted = pick(total, greedy.name)
    if vote:
        message = latest_message(step.request.contents)
        total = fused(total, message, dict(step.options.known_by))
    best = pick(total, greedy.name)
    return next(c for c in choices if c.name == best), unvoted


def _layout(step: Step, layout: DecisionLayout, choices: Sequence[Choice]) -> _Asked:
    if layout == "functions":
        instruction = step.options.instruction
        return _Asked(
            lambda request: functions_request(request, instruction=instruction, choices=choices),
            names=tuple(function_names(choices)),
            key=NAME_KEY,
        )
    return _Asked(_decision_builder(step, choices))


def _decision_builder(step: Step, choices: Sequence[Choice]) -> Callable[[LlmRequest], LlmRequest]:
    def build(request: LlmRequest) -> LlmRequest:
        return decision_request(
            request,
            agent=step.options.agent,
            instruction=step.options.instruction,
            choices=choices,
        )

    return build


def _scored(request: LlmRequest, scoring: ChoiceScoring) -> LlmRequest:
    if scoring == "greedy":
        return request
    config = request.config.model_copy(update={"top_logprobs": TOP_LOGPROBS})
    return request.model_copy(update={"config": config})


async def _prior(
    step: Step, ask: _Asked, asked: LlmRequest, names: Sequence[str]
) -> dict[str, float] | None:
    """The options' scores for a content-free message under the same prompt: asked
    once per prompt and options, then kept (`PRIORS`)."""
    kept = PRIORS.get(asked.system_instruction, names)
    if kept is not None:
        return kept
    blank = Content(role="user", parts=(Part(text=CONTENT_FREE),))
    response = await step.call(
        _scored(ask.build(step.request.model_copy(update={"contents": [blank]})), "logprobs")
    )
    scores = option_scores(response.logprobs, names, key=ask.key)
    if scores is not None:
        PRIORS.put(asked.system_instruction, names, scores)
    return scores


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
