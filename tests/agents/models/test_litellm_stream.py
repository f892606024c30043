"""`LiteLlmModel.generate_stream` through real litellm against a streaming local server."""

from __future__ import annotations

import pytest

from agents import LlmAgent
from agents.models.base import LlmResponse, ModelError, ToolDeclaration
from agents.runner import Runner
from agents.sessions.service import InMemorySessionService
from tests.agents.models.test_litellm_model import ask, make_model
from tests.fakes import FakeOpenAIServer, error, text, tool_call, tool_call_reply


async def collect(model: object, request: object) -> list[LlmResponse]:
    return [r async for r in model.generate_stream(request)]  # type: ignore[attr-defined]


async def test_text_arrives_in_deltas_then_whole_with_usage(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(text("Your refund is on its way.", usage=(30, 7)))
    responses = await collect(make_model(openai_server), ask("refund?"))
    *partial, final = responses
    assert len(partial) > 1 and all(r.partial for r in partial)
    assert "".join(r.text for r in partial) == final.text == "Your refund is on its way."
    assert not final.partial
    assert final.usage is not None and final.usage.completion_tokens == 7
    assert openai_server.bodies[0]["stream"] is True


async def test_a_failure_before_the_first_delta_is_retried(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(error(500), text("ok now"))
    responses = await collect(make_model(openai_server), ask("hi"))
    assert responses[-1].text == "ok now"
    assert len(openai_server.requests) == 2


async def test_a_client_error_ends_the_stream_as_a_model_error(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(error(400, "bad request", error_type="invalid_request_error"))
    with pytest.raises(ModelError) as caught:
        await collect(make_model(openai_server), ask("hi"))
    assert caught.value.code == "model_bad_request"


async def test_native_tool_calls_stream_to_a_complete_call(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.add(tool_call_reply(tool_call("transfer_to_agent", {"agent_name": "billing"})))
    request = ask("charged twice").model_copy(
        update={"tools": [ToolDeclaration(name="transfer_to_agent")]}
    )
    *_, final = await collect(make_model(openai_server), request)
    assert [(c.name, c.args) for c in final.function_calls] == [
        ("transfer_to_agent", {"agent_name": "billing"})
    ]


async def test_json_answers_are_not_streamed(openai_server: FakeOpenAIServer) -> None:
    openai_server.add(text('{"goal": "x"}'))
    request = ask("summarise").model_copy(update={"response_schema": {"type": "object"}})
    responses = await collect(make_model(openai_server), request)
    assert [r.partial for r in responses] == [False]
    assert "stream" not in openai_server.bodies[0]


async def test_a_streamed_runner_turn_through_litellm(openai_server: FakeOpenAIServer) -> None:
    openai_server.add(text("Hello from the model."))
    service = InMemorySessionService()
    session = await service.create_session(app_name="app", user_id="u1")
    agent = LlmAgent(name="root", model=make_model(openai_server))
    runner = Runner(agent=agent, app_name="app", session_service=service)
    events = [
        e
        async for e in runner.run_async(
            user_id="u1", session_id=session.id, message="hi", streaming=True
        )
    ]
    assert "".join(e.text for e in events if e.partial) == "Hello from the model."
    assert events[-1].text == "Hello from the model." and not events[-1].partial
