"""The invocation log: one INFO line per invocation however it ends, per-event lines at DEBUG."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest

from agents import AgentTool, Event, LlmAgent, SessionStoreError
from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ModelProfile
from agents.models.scripted import ScriptedModel, call
from tests.agents.conversation import AgentWritesFail, Conversation

FIELDS = (
    "invocation_id",
    "outcome",
    "events",
    "agents",
    "transfers",
    "tools",
    "error_code",
    "parent_invocation_id",
    "prompt_tokens",
)


def invocation_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The `invocation` lines logged, as dicts of their fields."""
    return [
        {k: getattr(r, k, None) for k in FIELDS}
        for r in caplog.records
        if r.name == "agents.invocations" and r.getMessage() == "invocation"
    ]


async def test_a_completed_invocation_logs_one_line_and_no_event_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    conversation = Conversation(LlmAgent(name="root"), ScriptedModel(["Hello!", "Again."]))
    await conversation.send("hi")
    await conversation.send("and again")
    lines = invocation_lines(caplog)
    assert [(line["outcome"], line["events"], line["agents"]) for line in lines] == [
        ("completed", ["e1", "e2"], ["root"]),
        ("completed", ["e3", "e4"], ["root"]),
    ]
    assert lines[0]["invocation_id"] != lines[1]["invocation_id"]
    assert lines[0]["transfers"] is None and lines[0]["tools"] is None
    assert lines[0]["prompt_tokens"] is not None  # the scripted model reports usage
    assert not [r for r in caplog.records if r.name == "agents.events"]


async def test_an_error_event_makes_the_invocation_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    model = ScriptedModel([KeyError("boom")])
    await Conversation(LlmAgent(name="root"), model).send_events("go")
    [line] = invocation_lines(caplog)
    assert line["outcome"] == "failed" and line["error_code"] == "internal_error"
    assert line["events"] == ["e1", "e2"]


async def test_a_store_failure_is_logged_as_raised(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)

    conversation = Conversation(
        LlmAgent(name="root"), ScriptedModel(["hi"]), service=AgentWritesFail()
    )
    with pytest.raises(SessionStoreError):
        await conversation.send("hello")
    [line] = invocation_lines(caplog)
    assert line["outcome"] == "raised" and line["events"] == ["e1"]


async def test_a_caller_that_stops_reading_is_logged_as_closed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    conversation = await Conversation(LlmAgent(name="root"), ScriptedModel(["Hello!"])).start()
    assert conversation.session_id is not None
    stream = cast(
        AsyncGenerator[Event, None],
        conversation.runner.run_async(
            user_id="u1", session_id=conversation.session_id, message="hi"
        ),
    )
    first = await anext(stream)
    assert first.author == "root"
    await stream.aclose()
    [line] = invocation_lines(caplog)
    assert line["outcome"] == "closed"


class HangingModel:
    """A model whose one call never answers (until cancelled)."""

    name = "hanging"
    profile = ModelProfile()

    def __init__(self) -> None:
        self.called = asyncio.Event()

    async def generate(self, request: LlmRequest) -> LlmResponse:
        self.called.set()
        await asyncio.sleep(3600)
        raise AssertionError("not cancelled")


async def test_a_cancelled_invocation_is_logged_as_cancelled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    model = HangingModel()
    task = asyncio.create_task(Conversation(LlmAgent(name="root"), model).send("hi"))
    await asyncio.wait_for(model.called.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [line] = invocation_lines(caplog)
    assert line["outcome"] == "cancelled" and line["events"] == ["e1"]


async def test_a_transfer_and_a_consulted_agent_are_on_their_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    checker = LlmAgent(name="policy_checker", description="Policy.")
    billing = LlmAgent(name="billing_agent", description="Billing.", tools=[AgentTool(checker)])
    root = LlmAgent(name="support_supervisor", sub_agents=[billing])
    model = ScriptedModel(
        [
            call("transfer_to_agent", agent_name="billing_agent"),
            call("policy_checker", request="May we refund $12.50?"),
            "ALLOWED.",
            "Refund approved.",
        ]
    )
    await Conversation(root, model).send("refund my $12.50 fee")
    child, parent = invocation_lines(caplog)  # the consulted agent's run ends first
    assert parent["agents"] == ["support_supervisor", "billing_agent"]
    assert parent["transfers"] == ["support_supervisor->billing_agent"]
    assert parent["tools"] == ["transfer_to_agent", "policy_checker"]
    assert parent["outcome"] == "completed" and parent["parent_invocation_id"] is None
    assert child["parent_invocation_id"] == parent["invocation_id"]
    assert child["agents"] == ["policy_checker"] and child["events"] == ["e1", "e2"]


async def test_debug_adds_one_line_per_stored_event(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    await Conversation(LlmAgent(name="root"), ScriptedModel(["Hello!"])).send("hi")
    events = [r for r in caplog.records if r.name == "agents.events"]
    assert [(r.levelno, r.event_id, r.author) for r in events] == [  # type: ignore[attr-defined]
        (logging.DEBUG, "e1", "user"),
        (logging.DEBUG, "e2", "root"),
    ]
    [line] = invocation_lines(caplog)
    assert line["events"] == ["e1", "e2"]
