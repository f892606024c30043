"""`LiteLlmModel` through real litellm against a local OpenAI-compatible server."""

from __future__ import annotations

import logging

import pytest

from agents import FunctionTool, LlmAgent
from agents.events import Part
from agents.metrics import REGISTRY
from agents.models.base import Content, GenerateConfig, LlmRequest, ModelError
from agents.models.litellm_model import LiteLlmModel
from tests.agents.conversation import Conversation
from tests.fakes import (
    FakeOpenAIServer,
    error,
    json_reply,
    text,
    tool_call,
    tool_call_reply,
)

API_KEY = "sk-test-SECRET-4242"
BACKOFF = 0.05  # the first retry waits between BACKOFF / 2 and BACKOFF


def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order's delivery status."""
    return {"order_id": order_id, "status": "late"}


def make_model(server: FakeOpenAIServer, **kwargs: object) -> LiteLlmModel:
    options: dict[str, object] = {"backoff_base": BACKOFF, "timeout": 5.0, **kwargs}
    return LiteLlmModel(
        "openai/test",
        api_base=server.base_url,
        api_key=API_KEY,
        **options,  # type: ignore[arg-type]
    )


def ask(text_: str, agent_name: str = "root") -> LlmRequest:
    return LlmRequest(
        agent_name=agent_name, contents=[Content(role="user", parts=(Part(text=text_),))]
    )


async def test_litellm_model_two_turn_tool_conversation_survives_a_500(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(
        tool_call_reply(tool_call("lookup_order", {"order_id": "A-1001"}, id="call_A1001")),
        text("Order A-1001 is running late."),
        error(500, "upstream exploded"),
        text("You're welcome."),
    )
    model = make_model(openai_server)
    conversation = Conversation(LlmAgent(name="root", tools=[lookup_order]), model)

    first = await conversation.send("Where is my order A-1001?")
    second = await conversation.send("Thanks!")

    assert first == [
        ("root", ("call", "lookup_order", {"order_id": "A-1001"})),
        ("root", ("response", "lookup_order", {"order_id": "A-1001", "status": "late"})),
        ("root", "Order A-1001 is running late."),
    ]
    assert second == [("root", "You're welcome.")]
    openai_server.assert_complete()

    bodies = openai_server.bodies
    assert len(bodies) == 4
    assert bodies[0]["model"] == "test"
    assert bodies[0]["tools"][0]["function"]["name"] == "lookup_order"
    assistant = next(m for m in bodies[1]["messages"] if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["id"] == "call_A1001"
    tool_message = next(m for m in bodies[1]["messages"] if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "call_A1001"
    # The 500 was retried with the same request, after a backoff.
    assert bodies[3] == bodies[2]
    assert bodies[2]["messages"][-1] == {"role": "user", "content": "Thanks!"}
    gap = openai_server.requests[3].received_at - openai_server.requests[2].received_at
    assert gap >= BACKOFF / 2
    assert (
        REGISTRY.get("support_bot_model_retries_total", agent="root", reason="model_unavailable")
        == 1
    )


async def test_litellm_model_records_usage_finish_reason_and_cost(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(text("a", usage=(1000, 500)), text("cut", finish_reason="length"))
    priced = LiteLlmModel("openai/gpt-4o-mini", api_base=openai_server.base_url, api_key=API_KEY)
    response = await priced.generate(ask("hi"))
    assert response.usage is not None
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (1000, 500)
    assert response.usage.cost > 0
    assert response.model == "openai/gpt-4o-mini"

    unpriced = await make_model(openai_server).generate(ask("more"))
    assert unpriced.finish_reason == "length"
    assert unpriced.usage is not None and unpriced.usage.cost == 0.0


async def test_litellm_model_honours_retry_after_on_429(openai_server: FakeOpenAIServer) -> None:
    openai_server.add(error(429, "slow down", headers={"Retry-After": "0.4"}), text("ok"))
    response = await make_model(openai_server).generate(ask("hi"))
    assert response.text == "ok"
    gap = openai_server.requests[1].received_at - openai_server.requests[0].received_at
    assert gap >= 0.4


async def test_litellm_model_gives_up_on_a_retry_after_too_long(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(error(429, headers={"Retry-After": "3600"}))
    with pytest.raises(ModelError) as caught:
        await make_model(openai_server).generate(ask("hi"))
    assert caught.value.code == "rate_limited"
    assert len(openai_server.requests) == 1


async def test_litellm_model_timeout_is_retried_then_raised(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(text("late").delayed(3), text("late").delayed(3))
    model = make_model(openai_server, timeout=0.3, max_retries=1)
    with pytest.raises(ModelError) as caught:
        await model.generate(ask("hi", agent_name="billing_agent"))
    assert caught.value.code == "model_timeout"
    assert len(openai_server.requests) == 2
    assert (
        REGISTRY.get("support_bot_model_errors_total", agent="billing_agent", code="model_timeout")
        == 1
    )


@pytest.mark.parametrize(
    ("status", "code"), [(400, "model_bad_request"), (401, "model_auth_failed")]
)
async def test_litellm_model_client_errors_are_not_retried(
    openai_server: FakeOpenAIServer, status: int, code: str
) -> None:
    openai_server.add(error(status, "nope", error_type="invalid_request_error"))
    with pytest.raises(ModelError) as caught:
        await make_model(openai_server).generate(ask("hi"))
    assert caught.value.code == code
    assert len(openai_server.requests) == 1


async def test_litellm_model_malformed_tool_args_retry_then_succeed(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(
        tool_call_reply(tool_call("lookup_order", '{"order_id": "A-1')),
        tool_call_reply(tool_call("lookup_order", {"order_id": "A-1001"}, id="c2")),
    )
    response = await make_model(openai_server).generate(ask("where?"))
    assert [(c.id, c.args) for c in response.function_calls] == [("c2", {"order_id": "A-1001"})]
    assert response.usage is not None and response.usage.prompt_tokens == 20  # both attempts


async def test_litellm_model_malformed_tool_args_end_the_turn_with_a_clear_event(
    openai_server: FakeOpenAIServer,
) -> None:
    broken = tool_call_reply(tool_call("lookup_order", "{not json"))
    openai_server.add(broken, broken, broken)
    model = make_model(openai_server, max_retries=2)
    conversation = Conversation(LlmAgent(name="root", tools=[lookup_order]), model)
    events = await conversation.send_events("Where is A-1001?")
    assert events[-1].error_code == "malformed_tool_call"
    assert len(openai_server.requests) == 3
    openai_server.assert_complete()


async def test_litellm_model_prompted_tools_round_trip(openai_server: FakeOpenAIServer) -> None:
    openai_server.add(
        json_reply({"tool": "lookup_order", "args": {"order_id": "A-1001"}}),
        json_reply({"reply": "A-1001 is late."}),
    )
    model = make_model(openai_server, tool_mode="prompted", decision="one-call")
    conversation = Conversation(LlmAgent(name="root", tools=[lookup_order]), model)
    turn = await conversation.send("Where is A-1001?")
    assert turn == [
        ("root", ("call", "lookup_order", {"order_id": "A-1001"})),
        ("root", ("response", "lookup_order", {"order_id": "A-1001", "status": "late"})),
        ("root", "A-1001 is late."),
    ]
    first, second = openai_server.bodies
    assert "tools" not in first
    assert "lookup_order" in first["messages"][0]["content"]
    schema = first["response_format"]["json_schema"]["schema"]
    assert [b["properties"].get("tool", {}).get("enum") for b in schema["anyOf"]] == [
        None,
        ["lookup_order"],
    ]
    assert all(m["role"] in ("system", "user", "assistant") for m in second["messages"])
    assert second["messages"][-2]["content"] == (
        '{"tool": "lookup_order", "args": {"order_id": "A-1001"}}'
    )
    assert second["messages"][-1]["content"].startswith("Result of tool lookup_order:")


async def test_litellm_model_prompted_retry_tells_the_model_what_was_wrong(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(
        text('I will call {"tool": "lookup_order", "args": "{oops"}'),
        json_reply({"tool": "lookup_order", "args": {"order_id": "A-1"}}),
    )
    model = make_model(openai_server, tool_mode="prompted", decision="one-call")
    request = ask("where?").model_copy(update={"tools": [FunctionTool(lookup_order).declaration()]})
    response = await model.generate(request)
    assert response.function_calls[0].args == {"order_id": "A-1"}
    correction = openai_server.bodies[1]["messages"][-1]
    assert correction["role"] == "user"
    assert correction["content"].startswith("Your answer could not be used")


async def test_litellm_model_sends_schema_in_prompt_when_response_format_is_rejected(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(
        error(400, "response_format json_schema is not supported"),
        json_reply({"ok": True}),
        json_reply({"ok": False}),
    )
    model = make_model(openai_server)
    request = ask("check").model_copy(update={"response_schema": {"type": "object"}})
    assert (await model.generate(request)).text == '{"ok": true}'
    await model.generate(request)
    assert "response_format" in openai_server.bodies[0]
    for body in openai_server.bodies[1:]:
        assert "response_format" not in body
        assert "Answer with JSON matching this schema" in body["messages"][0]["content"]


def test_litellm_model_auto_tool_mode_follows_litellm() -> None:
    assert not LiteLlmModel("openai/test", tool_mode="auto").profile.native_tools
    assert LiteLlmModel("gpt-4o-mini", tool_mode="auto").profile.native_tools
    assert LiteLlmModel("openai/test").profile.native_tools


async def test_litellm_model_never_logs_the_api_key(
    openai_server: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    openai_server.add(error(500, f"echoed {API_KEY}"), text("ok"), error(401, "bad key"))
    model = make_model(openai_server)
    await model.generate(ask("hi"))
    with pytest.raises(ModelError) as caught:
        await model.generate(ask("again"))
    out, err = capfd.readouterr()
    retry_logs = [r for r in caplog.records if r.name == "agents.models.litellm_model"]
    assert "code=model_unavailable" in retry_logs[0].getMessage()
    for record in caplog.records:
        assert API_KEY not in record.getMessage()
    assert API_KEY not in out + err
    assert API_KEY not in str(caught.value)
    assert API_KEY not in repr(model)
    assert openai_server.requests[0].headers["Authorization"] == f"Bearer {API_KEY}"


async def test_litellm_model_unreachable_server_is_retried_then_unavailable() -> None:
    server = await FakeOpenAIServer().start()
    await server.close()  # nothing listens on its port any more
    model = make_model(server, max_retries=1)
    with pytest.raises(ModelError) as caught:
        await model.generate(ask("hi"))
    assert caught.value.code == "model_unavailable"
    retries = REGISTRY.get(
        "support_bot_model_retries_total", agent="root", reason="model_unavailable"
    )
    assert retries == 1


async def test_litellm_model_sends_sampling_settings_and_extra_params(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(text("ok"))
    model = make_model(openai_server, extra={"seed": 7})
    config = GenerateConfig(temperature=0.2, top_p=0.9, max_tokens=50, repetition_penalty=1.1)
    await model.generate(ask("hi").model_copy(update={"config": config}))
    body = openai_server.bodies[0]
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.2, 0.9, 50)
    assert body["repetition_penalty"] == 1.1
    assert body["seed"] == 7


async def test_litellm_model_input_dependent_replies_and_unscripted_calls(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(lambda body: text("echo: " + body["messages"][-1]["content"]))
    model = make_model(openai_server)
    assert (await model.generate(ask("ping"))).text == "echo: ping"
    with pytest.raises(ModelError, match="unexpected request #2") as caught:
        await model.generate(ask("one too many"))
    assert caught.value.code == "model_bad_request"
    with pytest.raises(AssertionError, match="1 unexpected request"):
        openai_server.assert_complete()


async def test_litellm_model_prompted_tools_decide_first_over_http(
    openai_server: FakeOpenAIServer,
) -> None:
    """On a prompted-tool model (the embedded one), the step is a constrained decision,
    then the tool's arguments under its own schema, then the reply: no tool messages."""
    openai_server.add(
        json_reply("lookup_order"),
        json_reply({"order_id": "A-1001"}),
        text("A-1001 is late."),  # the tool is called: answering is the only option left
    )
    model = make_model(openai_server, tool_mode="prompted")
    assert model.profile.decide_first
    conversation = Conversation(LlmAgent(name="root", tools=[lookup_order]), model)
    turn = await conversation.send("Where is A-1001?")
    assert turn == [
        ("root", ("call", "lookup_order", {"order_id": "A-1001"})),
        ("root", ("response", "lookup_order", {"order_id": "A-1001", "status": "late"})),
        ("root", "A-1001 is late."),
    ]
    decision, arguments, reply = openai_server.bodies
    assert decision["response_format"]["json_schema"]["schema"]["enum"] == ["root", "lookup_order"]
    assert decision["max_tokens"] == 32
    assert arguments["response_format"]["json_schema"]["schema"]["properties"].keys() == {
        "order_id"
    }
    for body in (decision, arguments, reply):
        assert "tools" not in body
        assert all(m["role"] in ("system", "user", "assistant") for m in body["messages"])
    assert "response_format" not in reply
