"""Prompted tool calls: the rewritten request, its JSON schema, and tolerant parsing."""

from __future__ import annotations

import jsonschema
import pytest

from agents.events import FunctionCall, FunctionResponse, Part
from agents.models.base import Content, LlmRequest, LlmResponse, ToolDeclaration
from agents.models.openai_format import MalformedToolCall
from agents.models.prompted_tools import parse_prompted_response, prompted_request

TRANSFER = ToolDeclaration(
    name="transfer_to_agent",
    description="Hand the conversation to another agent.",
    parameters={
        "type": "object",
        "properties": {"agent_name": {"type": "string", "enum": ["billing_agent"]}},
        "required": ["agent_name"],
    },
)
LOOKUP = ToolDeclaration(
    name="lookup_order",
    description="Find an order.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}},
)


def request_with_history() -> LlmRequest:
    call = FunctionCall(id="c1", name="lookup_order", args={"order_id": "A-1001"})
    result = FunctionResponse(id="c1", name="lookup_order", response={"status": "late"})
    return LlmRequest(
        system_instruction="You are the supervisor.",
        contents=[
            Content(role="user", parts=(Part(text="Where is A-1001?"),)),
            Content(role="model", parts=(Part(function_call=call),)),
            Content(role="user", parts=(Part(function_response=result),)),
            Content(role="model", parts=(Part(text="It is late."),)),
            Content(role="user", parts=(Part(text="Refund it"),)),
        ],
        tools=[TRANSFER, LOOKUP],
    )


def answer(text: str) -> LlmResponse:
    return LlmResponse.from_text(text)


def test_prompted_request_describes_tools_and_drops_native_ones() -> None:
    wire = prompted_request(request_with_history())
    assert wire.tools == []
    assert wire.system_instruction.startswith("You are the supervisor.\n\n")
    assert "- transfer_to_agent: Hand the conversation to another agent." in wire.system_instruction
    assert '"order_id"' in wire.system_instruction


def test_prompted_request_gives_a_concrete_example_per_tool() -> None:
    system = prompted_request(request_with_history()).system_instruction
    assert 'example: {"tool": "transfer_to_agent", "args": {"agent_name": "billing_agent"}}' in (
        system
    )
    assert 'example: {"tool": "lookup_order", "args": {"order_id": "<order_id>"}}' in system


def test_prompted_request_renders_history_as_text() -> None:
    wire = prompted_request(request_with_history())
    assert [(c.role, c.text) for c in wire.contents] == [
        ("user", "Where is A-1001?"),
        ("model", '{"tool": "lookup_order", "args": {"order_id": "A-1001"}}'),
        ("user", 'Result of tool lookup_order: {"status": "late"}'),
        ("model", '{"reply": "It is late."}'),
        ("user", "Refund it"),
    ]


def test_prompted_schema_accepts_only_replies_and_known_tools() -> None:
    schema = prompted_request(request_with_history()).response_schema
    assert schema is not None
    valid = [
        {"reply": "hi"},
        {"tool": "transfer_to_agent", "args": {"agent_name": "billing_agent"}},
        {"tool": "lookup_order", "args": {"order_id": "A-1"}},
    ]
    invalid = [
        {"tool": "made_up", "args": {}},
        {"tool": "transfer_to_agent", "args": {"agent_name": "nobody"}},
        {"reply": "hi", "extra": 1},
        {"something": "else"},
    ]
    for value in valid:
        jsonschema.validate(value, schema)
    for value in invalid:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(value, schema)


def test_prompted_schema_wraps_a_response_schema_as_the_reply() -> None:
    request = LlmRequest(
        tools=[LOOKUP],
        response_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
    )
    wire = prompted_request(request)
    assert wire.response_schema is not None
    jsonschema.validate({"reply": {"ok": True}}, wire.response_schema)
    parsed = parse_prompted_response(answer('{"reply": {"ok": true}}'))
    assert parsed.text == '{"ok": true}'


def test_prompted_schema_keeps_refs_of_nested_models_resolvable() -> None:
    refund = ToolDeclaration(
        name="refund",
        parameters={
            "type": "object",
            "properties": {"order": {"$ref": "#/$defs/Order"}},
            "required": ["order"],
            "$defs": {"Order": {"type": "object", "properties": {"id": {"type": "string"}}}},
        },
    )
    schema = prompted_request(LlmRequest(tools=[refund])).response_schema
    assert schema is not None
    jsonschema.validate({"tool": "refund", "args": {"order": {"id": "A-1"}}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tool": "refund", "args": {"order": {"id": 1}}}, schema)


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": "lookup_order", "args": {"order_id": "A-1001"}}',
        '```json\n{"tool": "lookup_order", "args": {"order_id": "A-1001"}}\n```',
        'Sure! {"tool": "lookup_order", "arguments": "{\\"order_id\\": \\"A-1001\\"}"} done',
        '{"name": "lookup_order", "parameters": {"order_id": "A-1001"}}',
    ],
)
def test_prompted_parse_reads_tool_calls_tolerantly(text: str) -> None:
    (call,) = parse_prompted_response(answer(text)).function_calls
    assert (call.name, call.args) == ("lookup_order", {"order_id": "A-1001"})


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ('{"reply": "Your refund is on its way."}', "Your refund is on its way."),
        ('Here you go:\n```\n{"reply": "Done"}\n```', "Done"),
        ("Plain prose without any JSON.", "Plain prose without any JSON."),
    ],
)
def test_prompted_parse_reads_replies(text: str, reply: str) -> None:
    parsed = parse_prompted_response(answer(text))
    assert parsed.text == reply
    assert parsed.function_calls == []


@pytest.mark.parametrize(
    "text",
    ["", "   ", '{"tool": "lookup_order", "args": "{broken"}', '{"unrelated": 1}', '{"tool": 3}'],
)
def test_prompted_parse_rejects_unusable_answers(text: str) -> None:
    with pytest.raises(MalformedToolCall):
        parse_prompted_response(answer(text))
