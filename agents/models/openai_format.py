"""Pure conversions between `LlmRequest`/`LlmResponse` and the OpenAI chat-completions shape.

litellm speaks the OpenAI format for every provider, so this is the only wire format the
runtime needs. Nothing here does I/O or imports litellm: a response is read from a plain
dict or anything with `model_dump()` (litellm's `ModelResponse`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from agents.events import FunctionCall, Part, Usage
from agents.models.base import (
    Content,
    GenerateConfig,
    LlmRequest,
    LlmResponse,
    TokenLogprobs,
    ToolDeclaration,
)

Message = dict[str, Any]


class MalformedToolCall(ValueError):
    """The model's answer cannot be read as the tool call it claims to be."""


def to_openai_messages(request: LlmRequest) -> list[Message]:
    """The request's system instruction and contents as OpenAI chat messages.

    `model` turns become assistant messages (text and `tool_calls`, ids preserved);
    function responses become `tool` messages answering the call with the same id.
    """
    messages: list[Message] = []
    if request.system_instruction:
        messages.append({"role": "system", "content": request.system_instruction})
    for content in request.contents:
        messages.extend(content_to_messages(content))
    return messages


def content_to_messages(content: Content) -> list[Message]:
    """One `Content` as zero or more OpenAI messages (tool results come first)."""
    tool_messages = [
        {
            "role": "tool",
            "tool_call_id": p.function_response.id,
            "content": dump_json(p.function_response.response),
        }
        for p in content.parts
        if p.function_response is not None
    ]
    text = content.text
    calls = [p.function_call for p in content.parts if p.function_call is not None]
    if content.role == "model":
        if not text and not calls:
            return tool_messages
        message: Message = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [tool_call_to_openai(c) for c in calls]
        # The assistant's calls precede the results that answer them.
        return [message, *tool_messages]
    if tool_messages and not text:
        return tool_messages
    return [*tool_messages, {"role": content.role, "content": text}]


def tool_call_to_openai(call: FunctionCall) -> Message:
    """A `FunctionCall` as an OpenAI `tool_calls` entry."""
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": dump_json(call.args)},
    }


def to_openai_tools(tools: list[ToolDeclaration]) -> list[Message]:
    """Tool declarations as OpenAI function tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def to_response_format(schema: dict[str, Any]) -> Message:
    """A JSON schema as an OpenAI `response_format` of type `json_schema`.

    Not `strict`: OpenAI's strict mode rejects ordinary pydantic schemas (optional
    fields, open objects), and local servers ignore the flag anyway.
    """
    title = str(schema.get("title") or "response")
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", title)[:64] or "response"
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


def config_to_params(config: GenerateConfig) -> dict[str, Any]:
    """Sampling settings as `acompletion` keyword arguments (unset ones are left out).

    `repetition_penalty` is not an OpenAI parameter, so it travels in `extra_body` under
    both names servers use (vLLM's `repetition_penalty`, llama.cpp's `repeat_penalty`).
    Extra fields on the config are passed through unchanged (`seed`, `stop`, ...).
    """
    params: dict[str, Any] = {}
    for key in ("temperature", "max_tokens", "top_p"):
        value = getattr(config, key)
        if value is not None:
            params[key] = value
    if config.top_logprobs is not None:
        params.update(logprobs=True, top_logprobs=config.top_logprobs)
    if config.repetition_penalty is not None:
        penalty = config.repetition_penalty
        params["extra_body"] = {"repetition_penalty": penalty, "repeat_penalty": penalty}
    params.update(config.model_extra or {})
    return params


def to_openai_params(request: LlmRequest) -> dict[str, Any]:
    """Messages, tools, response format and sampling settings for one call."""
    params: dict[str, Any] = {"messages": to_openai_messages(request)}
    if request.tools:
        params["tools"] = to_openai_tools(request.tools)
    if request.response_schema is not None:
        params["response_format"] = to_response_format(request.response_schema)
    params.update(config_to_params(request.config))
    return params


def from_openai_response(response: Any) -> LlmResponse:
    """The first choice of a chat completion as an `LlmResponse` (usage without cost).

    Raises `MalformedToolCall` when a tool call has no name or its arguments are not a
    JSON object.
    """
    data = as_dict(response)
    choices = data.get("choices") or []
    if not choices:
        return LlmResponse(model=data.get("model"), usage=usage_from_openai(data))
    choice = as_dict(choices[0])
    message = as_dict(choice.get("message") or {})
    parts: list[Part] = []
    text = message_text(message.get("content"))
    if text:
        parts.append(Part(text=text))
    for raw_call in message.get("tool_calls") or []:
        parts.append(Part(function_call=tool_call_from_openai(as_dict(raw_call))))
    return LlmResponse(
        parts=tuple(parts),
        usage=usage_from_openai(data),
        model=data.get("model"),
        finish_reason=choice.get("finish_reason"),
        logprobs=logprobs_from_openai(choice.get("logprobs")),
    )


def logprobs_from_openai(raw: Any) -> tuple[TokenLogprobs, ...]:
    """A choice's `logprobs.content` (token, then `top_logprobs` alternatives), if any."""
    content = as_dict(raw).get("content") if raw else None
    found = []
    for item in content or []:
        entry = as_dict(item)
        top = {
            str(as_dict(alt).get("token")): float(as_dict(alt).get("logprob") or 0.0)
            for alt in entry.get("top_logprobs") or []
        }
        found.append(TokenLogprobs(token=str(entry.get("token") or ""), top=top))
    return tuple(found)


def tool_call_from_openai(raw: dict[str, Any]) -> FunctionCall:
    """One OpenAI `tool_calls` entry as a `FunctionCall`, keeping its id."""
    function = as_dict(raw.get("function") or {})
    name = function.get("name")
    if not name:
        raise MalformedToolCall(f"tool call without a function name: {raw!r:.200}")
    args = parse_arguments(name, function.get("arguments"))
    call_id = raw.get("id")
    return (
        FunctionCall(id=call_id, name=name, args=args)
        if call_id
        else FunctionCall(name=name, args=args)
    )


def parse_arguments(name: str, arguments: Any) -> dict[str, Any]:
    """Tool-call arguments (a JSON string, usually) as a dict; empty means no arguments."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments)
    except (TypeError, json.JSONDecodeError) as exc:
        raise MalformedToolCall(f"arguments of {name!r} are not valid JSON: {exc}") from exc
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedToolCall(f"arguments of {name!r} are not a JSON object: {value!r:.200}")
    return value


def message_text(content: Any) -> str:
    """Message content as text; some providers send a list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(item.get("text", "")) if isinstance(item, dict) else str(item) for item in content
        )
    return str(content)


def usage_from_openai(data: dict[str, Any]) -> Usage | None:
    """Token counts from a completion's `usage`, or None when the server sent none."""
    usage = data.get("usage")
    if not usage:
        return None
    usage = as_dict(usage)
    return Usage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def as_dict(value: Any) -> dict[str, Any]:
    """A dict view of a plain dict or a pydantic/OpenAI object."""
    if isinstance(value, dict):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        result = dump()
        if isinstance(result, dict):
            return result
    return dict(vars(value))


def dump_json(value: Any) -> str:
    """Compact JSON that never fails: unserialisable values are rendered with `str`."""
    return json.dumps(value, ensure_ascii=False, default=str)
