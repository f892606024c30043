"""Tool calls for models without native tool calling: described in the prompt, answered in JSON.

The request is rewritten before it goes out: the tools are described in the system
prompt, the model must answer with one JSON object, either `{"reply": "..."}` or
`{"tool": "<name>", "args": {...}}`, and a JSON schema of exactly those shapes (one branch
per tool, whose `args` is that tool's parameter schema) is sent as `response_format` so a
server with constrained decoding cannot produce anything else. Earlier tool calls and
results in the history are rendered as text in the same format, since such models have
no tool messages. The answer is parsed back into text or a `FunctionCall`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agents.events import FunctionCall, Part
from agents.models.base import Content, LlmRequest, LlmResponse, ToolDeclaration
from agents.models.openai_format import MalformedToolCall, dump_json, parse_arguments

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_ARG_KEYS = ("args", "arguments", "parameters")


def prompted_request(request: LlmRequest) -> LlmRequest:
    """`request` rewritten for a model that only answers in text.

    The result has no tools; its `response_schema` is the reply-or-tool schema, and its
    history holds earlier calls and results as text.
    """
    system = "\n\n".join(s for s in (request.system_instruction, tool_prompt(request)) if s)
    return request.model_copy(
        update={
            "system_instruction": system,
            "contents": [render_content(c) for c in request.contents],
            "tools": [],
            "response_schema": prompted_schema(request.tools, request.response_schema),
        }
    )


def tool_prompt(request: LlmRequest) -> str:
    """The system-prompt section that describes the tools and the answer format."""
    if request.response_schema is not None:
        reply_shape = '{"reply": <your answer as a JSON value matching the answer schema>}'
        answer_schema = f"\nAnswer schema: {dump_json(request.response_schema)}"
    else:
        reply_shape = '{"reply": "<your answer to the user>"}'
        answer_schema = ""
    lines = [
        "You can call tools. Answer with exactly one JSON object and nothing else:",
        '- to call a tool: {"tool": "<tool name>", "args": {<arguments>}}',
        f"- to answer: {reply_shape}",
        "Call at most one tool per answer. The tool's result comes back in the next "
        "message; then answer or call another tool. Saying that you call a tool does not "
        "call it: only the JSON does." + answer_schema,
        "",
        "Tools:",
    ]
    for tool in request.tools:
        lines.append(f"- {tool.name}: {tool.description}".rstrip())
        lines.append(f"  args schema: {dump_json(tool.parameters)}")
        for example in tool_examples(tool):
            lines.append(f"  example: {example}")
    return "\n".join(lines)


def tool_examples(tool: ToolDeclaration, *, limit: int = 4) -> list[str]:
    """Concrete calls, one per allowed value of the tool's first enum argument (at most
    `limit`), else one with placeholder values. Small models copy examples far more
    reliably than they follow a schema."""
    properties: dict[str, Any] = (tool.parameters or {}).get("properties", {})
    placeholder = {name: _placeholder(name, spec) for name, spec in properties.items()}
    for name, spec in properties.items():
        choices = spec.get("enum") if isinstance(spec, dict) else None
        if choices:
            return [
                dump_json({"tool": tool.name, "args": {**placeholder, name: choice}})
                for choice in choices[:limit]
            ]
    return [dump_json({"tool": tool.name, "args": placeholder})]


def _placeholder(name: str, spec: Any) -> Any:
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return f"<{name}>"


def prompted_schema(
    tools: list[ToolDeclaration], reply_schema: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A JSON schema accepting a reply or a call to one of `tools` with valid args."""
    reply: dict[str, Any] = {
        "type": "object",
        "properties": {"reply": reply_schema or {"type": "string"}},
        "required": ["reply"],
        "additionalProperties": False,
    }
    # `$ref`s resolve against the root, so each tool's `$defs` move up to it.
    defs: dict[str, Any] = {}
    calls = []
    for tool in tools:
        args = dict(tool.parameters or {"type": "object"})
        defs.update(args.pop("$defs", {}))
        calls.append(
            {
                "type": "object",
                "properties": {"tool": {"type": "string", "enum": [tool.name]}, "args": args},
                "required": ["tool", "args"],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {"title": "reply_or_tool_call", "anyOf": [reply, *calls]}
    if defs:
        schema["$defs"] = defs
    return schema


def render_content(content: Content) -> Content:
    """A history entry with its function calls and results turned into text.

    The model's own turns are shown in the JSON format it must answer in, so its
    history doubles as examples; tool results come back as user text.
    """
    if not any(p.function_call or p.function_response for p in content.parts):
        if content.role == "model" and content.text:
            return Content(role="model", parts=(Part(text=dump_json({"reply": content.text})),))
        return content
    lines: list[str] = []
    for part in content.parts:
        if part.function_call is not None:
            call = part.function_call
            lines.append(dump_json({"tool": call.name, "args": call.args}))
        elif part.function_response is not None:
            result = part.function_response
            lines.append(f"Result of tool {result.name}: {dump_json(result.response)}")
        elif part.text:
            lines.append(part.text)
    rendered = (Part(text="\n".join(lines)),)
    if any(p.function_call for p in content.parts):
        return Content(role="model", parts=rendered)
    return Content(role="user", parts=rendered)


def parse_prompted_response(response: LlmResponse) -> LlmResponse:
    """The model's JSON answer as text or a `FunctionCall`.

    Tolerates code fences and prose around the JSON, and answers in prose with no
    JSON at all (taken as the reply). Raises `MalformedToolCall` for an empty answer or
    JSON that is neither shape.
    """
    if response.function_calls:
        return response  # the server did tool calling natively after all
    text = response.text.strip()
    if not text:
        raise MalformedToolCall("empty answer; expected a JSON reply or tool call")
    value = find_json_object(text)
    if value is None:
        if "{" in text:
            raise MalformedToolCall(f"no JSON reply or tool call found in {text!r:.200}")
        return response
    if "tool" in value or "reply" not in value:
        return response.model_copy(update={"parts": (Part(function_call=_call(value)),)})
    reply = value["reply"]
    reply_text = reply if isinstance(reply, str) else dump_json(reply)
    return response.model_copy(update={"parts": (Part(text=reply_text),)})


def _call(value: dict[str, Any]) -> FunctionCall:
    name = value.get("tool") or value.get("name")
    if not isinstance(name, str) or not name:
        raise MalformedToolCall(f"tool call without a tool name: {value!r:.200}")
    raw_args = next((value[k] for k in _ARG_KEYS if k in value), None)
    return FunctionCall(name=name, args=parse_arguments(name, raw_args))


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` shaped like a reply or a tool call, if any."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                value = None
            if isinstance(value, dict) and ("reply" in value or "tool" in value or "name" in value):
                return value
            start = candidate.find("{", start + 1)
    return None
