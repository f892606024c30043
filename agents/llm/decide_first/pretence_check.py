"""The pretend-action check of every agent step, on any model.

A reply that names a transfer target or a tool (`agents.llm.decide_first.pretend_actions`)
becomes that transfer or call; a hand-off claim, a recited instruction or a placeholder
("[support email address]") is asked for again once, then settled by a decision among
the actions only, or cut down to the sentences that pretend nothing.
"""

from __future__ import annotations

import logging

from agents.events import Part
from agents.llm.decide_first.acts import act, tool_call
from agents.llm.decide_first.choices import Choice
from agents.llm.decide_first.decision import decide
from agents.llm.decide_first.json_answers import reply_field, unwrapped_reply
from agents.llm.decide_first.observers import current_observers
from agents.llm.decide_first.pretend_actions import (
    find_pretend_action,
    hands_off,
    without_pretence,
    written_call,
)
from agents.llm.decide_first.prompts import corrected_request, reply_request
from agents.llm.decide_first.step import Step
from agents.llm.decide_first.truncated_json import close_truncated_object
from agents.metrics import REGISTRY
from agents.models.base import LlmResponse, ModelError

logger = logging.getLogger(__name__)

REGISTRY.describe(
    "support_bot_pretend_actions_total",
    "counter",
    "Replies that pretended an action or held a placeholder, by agent and fix",
)


async def checked(step: Step, response: LlmResponse) -> LlmResponse:
    """`response`, or the real action it pretended, or a fresh answer (see module)."""
    while True:
        if response.function_calls or step.request.response_schema is not None:
            return step.done(response)
        inner = unwrapped_reply(response.text)
        if inner is not None:
            response = response.model_copy(update={"parts": (Part(text=inner),)})
        options = step.options
        pretend = find_pretend_action(
            response.text,
            targets=[name for name, _ in options.targets],
            tools=[t.name for t in options.tools if t.name not in options.called],
            instruction=options.recital_source,
            others=options.unnamed,
        )
        if pretend is None:
            return step.done(response)
        observers = current_observers.get()
        for notify in observers.pretend if observers else ():
            notify(options.agent, pretend)
        if pretend.kind == "transfer" and pretend.name:
            _count(step, "transferred")
            return await act(step, Choice(pretend.name, "transfer", ""))
        if pretend.kind == "tool" and pretend.name:
            _count(step, "called")
            return await tool_call(step, pretend.name)
        if written_call(response.text) in options.called:
            # A call it already made, written out again under the tool's answer: asked
            # again, the embedded model wrote the same call (the call in its history primes
            # it); asked for the reply as an object's one field, it answers the customer.
            kept = await _without_action(step, response)
            if kept is not None:
                return kept
        if not step.reasked:
            _count(step, "asked_again")
            step.reasked = True
            blank = pretend.name if pretend.kind == "placeholder" else None
            response = await step.call(
                corrected_request(
                    step.request, options.instruction, response.text, placeholder=blank
                )
            )
            continue
        actions = options.choices(answer=False)
        if not actions or not hands_off(response.text):
            # Announced work or a recital: the agent meant to answer (its decision
            # said so); a decision among the actions alone would overrule that.
            kept = await _without_action(step, response)
            if kept is not None:
                return kept
        if not actions:
            _count(step, "failed")
            raise ModelError(
                f"{options.agent} pretended an action it cannot take: {response.text!r:.200}",
                code="pretend_action",
            )
        _count(step, "decided")
        return await act(step, await decide(step, actions))


async def _without_action(step: Step, response: LlmResponse) -> LlmResponse | None:
    """A reply with no action taken: `response` without its pretending sentences, if
    any are left; else, once, the reply asked for under a schema that only holds it
    (`reply_request`: a model primed by tool calls in its history keeps writing one
    as text, but filling a `reply` field it writes to the customer), without its
    pretending sentences; None when nothing is left."""
    kept = _kept(step, response.text)
    if kept:
        _count(step, "cut")
        return step.done(response.model_copy(update={"parts": (Part(text=kept),)}))
    constrained = await step.call(reply_request(step.request, step.options.instruction))
    text = reply_field(constrained.text)
    if not text and constrained.finish_reason == "length":
        text = str((close_truncated_object(constrained.text) or {}).get("reply", ""))
    kept = _kept(step, text.strip())
    if not kept:
        return None
    _count(step, "constrained")
    return step.done(constrained.model_copy(update={"parts": (Part(text=kept),)}))


def _kept(step: Step, text: str) -> str:
    """`text` without its pretending sentences ("" when nothing else is left)."""
    options = step.options
    return without_pretence(
        text,
        targets=[name for name, _ in options.targets],
        tools=[t.name for t in options.tools if t.name not in options.called],
        instruction=options.recital_source,
        others=options.unnamed,
    )


def _count(step: Step, fix: str) -> None:
    REGISTRY.inc("support_bot_pretend_actions_total", agent=step.options.agent, fix=fix)
    logger.info("pretend action by %s: %s", step.options.agent, fix)
