"""Decide first, then act: how an `LlmAgent` step reaches a model without native tools.

A small model asked to "answer, or call transfer_to_agent" answers in prose nearly every
time, but it classifies well. So on a model whose profile decides first
(`ModelProfile.decide_first`), a step with transfer targets or tools is two calls:

1. **The decision** (`decision`): one constrained choice (a JSON-schema enum) among the
   agent itself (it answers), each allowed transfer target and each tool not yet called
   this turn (`options`; beside transfer targets, not a tool with `consult_before`: the
   review consults it), each listed by name and the description the tree gives it, in
   the profile's layouts (`prompts`, `function_layout`) and read as its `choice_scoring`
   says (`choice_scores`).
2. **The act** (`acts`): a transfer becomes the ordinary `transfer_to_agent` function
   call (no second call); a tool gets its arguments written under its own parameter
   schema; an answer is written with no tools in sight.
3. **The review** (`review`) of a written answer, when a tool is left that was not called
   this turn: a yes/no check against a tool's `consult_before`, or a choice between
   sending the reply and consulting a tool.

The decision and the review carry no chat turns: the conversation is one fenced block
(`transcript`) under the question, so the model classifies it instead of answering it.

On such a model no step sees the bookkeeping of a hand-off (`handoff_records`): a small
model reading the `transfer_to_agent` call and its result writes about the transfer
instead of answering. Every step, in either mode, is checked for pretend actions
(`pretence_check`, `pretend_actions`). Every call, the extra ones too, goes through the
agent's model-call path (`step`): it is spent from the invocation's model-call budget
and passes the before/after model callbacks and plugins (`agents.callbacks`), which see
the decision and act requests. Other models keep one call per step.

The agent calls in through `respond` alone, with the model's profile. Nothing here
imports the agent: it hands over what a step needs (`step_options`).
"""

from agents.llm.decide_first.observers import Decision, observe_decisions
from agents.llm.decide_first.options import StepOptions, step_options
from agents.llm.decide_first.respond import respond

__all__ = ["Decision", "StepOptions", "observe_decisions", "respond", "step_options"]
