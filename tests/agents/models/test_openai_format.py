"""Conversions between the runtime's request/response types and OpenAI chat messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.events import FunctionCall, FunctionResponse, Part, Usage
from agents.models.base import Content, GenerateConfig, LlmRequest, ToolDeclaration
from agents.models.openai_format import (
    MalformedToolCall,
    from_openai_response,
    to_openai_messages,
    to_openai_params,
)

LOOKUP = ToolDeclaration(
    name="lookup_order",
    description="Find an order by id.",
    parameters={
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
)


def two_turn_request() -> LlmRequest:
    call = FunctionCall(id="call_1", name="lookup_order", args={"order_id": "A-1001"})
    result = FunctionResponse(id="call_1", name="lookup_order", response={"status": "late"})
    return LlmRequest(
        agent_name="billing_agent",
        system_instruction="You handle billing.",
        contents=[
            Content(role="user", parts=(Part(text="Where is A-1001?"),)),
            Content(role="model", parts=(Part(text="Let me look."), Part(function_call=call))),
            Content(role="user", parts=(Part(function_response=result),)),
            Content(role="system", parts=(Part(text="[tech_support said] rebooted"),)),
        ],
        tools=[LOOKUP],
    )


def completion(message: dict[str, Any], finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "model": "test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }


def test_openai_format_messages_keep_roles_and_call_ids() -> None:
    assert to_openai_messages(two_turn_request()) == [
        {"role": "system", "content": "You handle billing."},
        {"role": "user", "content": "Where is A-1001?"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"order_id": "A-1001"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "late"}'},
        {"role": "system", "content": "[tech_support said] rebooted"},
    ]


def test_openai_format_params_carry_tools_schema_and_sampling() -> None:
    request = two_turn_request().model_copy(
        update={
            "response_schema": {"title": "Handoff record", "type": "object"},
            "config": GenerateConfig(temperature=0.2, max_tokens=64, repetition_penalty=1.1),
        }
    )
    params = to_openai_params(request)
    assert params["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": "Find an order by id.",
                "parameters": LOOKUP.parameters,
            },
        }
    ]
    assert params["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Handoff_record",
            "schema": {"title": "Handoff record", "type": "object"},
        },
    }
    assert params["temperature"] == 0.2
    assert params["max_tokens"] == 64
    assert "top_p" not in params
    assert params["extra_body"] == {"repetition_penalty": 1.1, "repeat_penalty": 1.1}


def test_openai_format_response_with_tool_calls_round_trips() -> None:
    request = two_turn_request()
    assistant = to_openai_messages(request)[2]
    response = from_openai_response(completion(assistant, "tool_calls"))
    assert response.parts == request.contents[1].parts
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage(prompt_tokens=12, completion_tokens=3)


def test_openai_format_text_response_keeps_finish_reason() -> None:
    response = from_openai_response(
        completion({"role": "assistant", "content": "cut of"}, finish_reason="length")
    )
    assert response.text == "cut of"
    assert response.function_calls == []
    assert response.finish_reason == "length"


@pytest.mark.parametrize("arguments", ["", None, "null", "{}"])
def test_openai_format_empty_arguments_mean_no_args(arguments: str | None) -> None:
    message = {
        "role": "assistant",
        "tool_calls": [{"id": "c", "function": {"name": "exit_loop", "arguments": arguments}}],
    }
    assert from_openai_response(completion(message)).function_calls == [
        FunctionCall(id="c", name="exit_loop", args={})
    ]


@pytest.mark.parametrize("arguments", ['{"order_id": "A-1', "[1, 2]", "not json"])
def test_openai_format_malformed_arguments_raise(arguments: str) -> None:
    message = {
        "role": "assistant",
        "tool_calls": [{"id": "c", "function": {"name": "lookup_order", "arguments": arguments}}],
    }
    with pytest.raises(MalformedToolCall, match="lookup_order"):
        from_openai_response(completion(message))


def test_openai_format_unserialisable_tool_result_is_still_sent() -> None:
    result = FunctionResponse(id="c", name="clock", response={"at": object()})
    request = LlmRequest(contents=[Content(role="user", parts=(Part(function_response=result),))])
    (message,) = to_openai_messages(request)
    assert message["role"] == "tool"
    assert json.loads(message["content"])["at"].startswith("<object")


def test_openai_format_list_content_is_joined() -> None:
    message = {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"text": "b"}]}
    assert from_openai_response(completion(message)).text == "ab"
