"""Bad input never crashes the runner or loses an event."""

from __future__ import annotations

import pytest

from agents import LlmAgent, SessionStoreError
from agents.models.base import ModelError
from agents.models.scripted import ScriptedModel, call
from tests.agents.conversation import AgentWritesFail, Conversation


class Opaque:
    pass


def explode(order_id: str) -> dict[str, str]:
    """Always fails."""
    raise RuntimeError(f"backend down for {order_id}")


def opaque() -> object:
    """Returns something that is not JSON."""
    return Opaque()


async def user_texts(conversation: Conversation) -> list[str]:
    session = await conversation.service.get_session(
        app_name="support", user_id="u1", session_id=conversation.session_id or ""
    )
    assert session is not None
    return [e.text for e in session.events if e.author == "user"]


async def test_bad_input_empty_message_gets_a_clear_event_without_a_model_call() -> None:
    conversation = Conversation(LlmAgent(name="root"), ScriptedModel())
    events = await conversation.send_events("   ")
    assert events[-1].error_code == "empty_message"
    assert await user_texts(conversation) == ["   "]


async def test_bad_input_huge_and_broken_unicode_messages_are_stored() -> None:
    model = ScriptedModel(["long one", "odd one"])
    conversation = Conversation(LlmAgent(name="root"), model)
    big = "refund " * 15_000
    await conversation.send(big)
    await conversation.send("bad \ud800 surrogate")
    texts = await user_texts(conversation)
    assert texts[0] == big
    assert texts[1] == "bad ? surrogate"
    model.assert_complete()


async def test_bad_input_tool_that_raises_is_reported_to_the_model() -> None:
    model = ScriptedModel([call("explode", order_id="A-1001"), "The order system is down."])
    turn = await Conversation(LlmAgent(name="root", tools=[explode]), model).send("status?")
    assert turn[1] == (
        "root",
        (
            "response",
            "explode",
            {"error": "tool explode failed: RuntimeError: backend down for A-1001"},
        ),
    )
    assert turn[-1] == ("root", "The order system is down.")


async def test_bad_input_non_json_tool_result_is_a_clear_error() -> None:
    model = ScriptedModel([call("opaque"), "Sorry."])
    turn = await Conversation(LlmAgent(name="root", tools=[opaque]), model).send("go")
    assert "not JSON" in turn[1][1][2]["error"]


async def test_bad_input_unknown_tool_is_reported_to_the_model() -> None:
    model = ScriptedModel([call("no_such_tool"), "Sorry."])
    turn = await Conversation(LlmAgent(name="root"), model).send("go")
    assert "unknown tool 'no_such_tool'" in turn[1][1][2]["error"]


async def test_bad_input_malformed_tool_call_from_model_ends_with_clear_event() -> None:
    model = ScriptedModel([ModelError("arguments are not JSON", code="malformed_tool_call")])
    conversation = Conversation(LlmAgent(name="root"), model)
    events = await conversation.send_events("go")
    assert events[-1].error_code == "malformed_tool_call"
    assert "a person will follow up" in events[-1].text
    assert await user_texts(conversation) == ["go"]


async def test_bad_input_unexpected_exception_becomes_internal_error_event() -> None:
    model = ScriptedModel([KeyError("boom")])
    events = await Conversation(LlmAgent(name="root"), model).send_events("go")
    assert events[-1].error_code == "internal_error"
    assert "KeyError" in (events[-1].error_message or "")


async def test_session_store_failure_escapes_the_runner() -> None:
    # Any other exception becomes an error event; a store failure cannot be stored, so
    # it reaches the caller (the bot tells the person the turn failed).
    conversation = Conversation(
        LlmAgent(name="root"), ScriptedModel(["hi"]), service=AgentWritesFail()
    )
    with pytest.raises(SessionStoreError, match="disk I/O"):
        await conversation.send("hello")
