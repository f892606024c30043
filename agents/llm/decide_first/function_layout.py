"""The `functions` layout of a decision: the options as function signatures.

The `question` layout (`prompts.decision_request`) lists the options under a
question about the conversation, fenced as data. This layout asks the same choice the way
a function-calling model is trained to meet it: the conversation as chat turns, and each
option as a function signature (its name and description) in a `# Tools` section of the
system prompt, one JSON signature per line inside `<tools>` tags (the Hermes layout that
Qwen2.5 and other open function-calling models are trained on). Answering the customer
is one more function, `answer_customer`. The answer is held by a JSON schema to
`{"name": <option>}`, so no server-side tool-call parser takes part; a chosen tool's
arguments are written afterwards, under the tool's own schema, as in the other layout.

On the embedded Qwen 1.5B the two layouts err on different messages (routing_dev: the
question layout misses deliveries and card arrivals, this one log-in and sign-up
messages), so a decision may be asked in both and read from their log-probabilities
together (`agents.llm.decide_first.decision`, `ModelProfile.decision_layouts`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agents.llm.decide_first.choices import Choice
from agents.llm.decide_first.prompts import choice_config, tool_less
from agents.models.base import Content, LlmRequest
from agents.models.prompted_tools import render_content

ANSWER_FUNCTION = "answer_customer"
"""The function that stands for the agent answering the customer itself."""
NAME_KEY = "name"
"""The answer's one field: `{"name": <option>}`."""
_HEAD = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def function_names(choices: Sequence[Choice]) -> list[str]:
    """Each choice's function name, in order: its own name, or `answer_customer` for the
    agent's own answer (with a suffix in the unlikely case a tree uses that name)."""
    taken = {c.name for c in choices if c.kind != "answer"}
    answer = ANSWER_FUNCTION
    while answer in taken:
        answer += "_"
    return [answer if c.kind == "answer" else c.name for c in choices]


def functions_request(
    request: LlmRequest, *, instruction: str, choices: Sequence[Choice]
) -> LlmRequest:
    """The decision among `choices` in the functions layout: the agent's instruction and
    the signatures (the same for every message, so a server caches them), the history as
    chat turns, and a schema that allows exactly one function name."""
    names = function_names(choices)
    signatures = [
        json.dumps(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": _function_text(choice),
                    "parameters": {"type": "object", "properties": {}},
                },
            },
            ensure_ascii=False,
        )
        for name, choice in zip(names, choices, strict=True)
    ]
    system = _HEAD + "\n".join(signatures) + _TAIL
    schema = {
        "title": "decision",
        "type": "object",
        "properties": {NAME_KEY: {"type": "string", "enum": names}},
        "required": [NAME_KEY],
    }
    contents = [_chat_turn(c) for c in request.contents]
    return tool_less(request, instruction, system, contents, schema, choice_config(request))


def _function_text(choice: Choice) -> str:
    description = choice.description or "(no description)"
    if choice.kind == "answer":
        return f"Answer the customer yourself. You handle: {description}"
    if choice.kind == "transfer":
        return f"Hand the conversation to {choice.name}. It handles: {description}"
    return description


def _chat_turn(content: Content) -> Content:
    """A history entry as a chat turn: text as it was, function calls and results as
    text (`render_content`)."""
    if any(p.function_call or p.function_response for p in content.parts):
        return render_content(content)
    return content
