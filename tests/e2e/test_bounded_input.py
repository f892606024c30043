"""End to end: bounded model input (issue 17 item 5) — long messages are clipped for
the model only, compaction survives an oversized turn, and an interrupted tool call is
closed so compaction resumes."""

from __future__ import annotations

import asyncio

from agents.compaction import COMPACTION_AUTHOR
from agents.events import Event, FunctionCall, Part, interrupted_responses
from agents.llm.agent import LlmAgent
from agents.models.base import LlmRequest
from agents.models.scripted import ScriptedModel, call
from agents.sessions.session import Session
from agents.tools.agent_tool import AgentTool
from bot.slack.render.blocks import INTERRUPTED_TEXT
from storage.threads import ThreadKey
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, BotHarness, dm
from tests.e2e.replies import answers, shown
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

LONG = "log line 42: disk full\n" * 1_700  # 39,100 characters, within Slack's 40,000


def _longest_user_text(request: LlmRequest) -> int:
    return max(len(c.text) for c in request.contents if c.role == "user")


async def test_bounded_input_long_messages_are_clipped_for_the_model_not_in_storage(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel(["Looks like a full disk.", "Still a full disk.", "Glad to help."])
    compaction = ScriptedModel(["The user pasted two long disk-full logs."])
    bot = await start_bot(
        support_tree(model),
        compaction_model=compaction,
        compaction_interval=3,
        max_model_message_chars=4_000,
    )
    root = "1700000500.000100"
    await bot.send_event(dm(LONG, ts=root))
    await bot.idle()
    await bot.send_event(dm(LONG, ts="1700000500.000200", thread_ts=root))
    await bot.idle()
    await bot.send_event(dm("thanks", ts="1700000500.000300", thread_ts=root))
    await bot.idle()
    # Every reply was posted: no turn failed on the size of the history.
    assert shown(answers(slack)[-1]).endswith("Glad to help.")
    last = model.requests[-1]
    assert _longest_user_text(last) < 4_200
    assert "message clipped for the model" in last.contents[0].text
    # Storage keeps both messages whole.
    db = bot.services.db
    record = await db.threads.get(ThreadKey(team_id=TEAM, channel_id="D1", thread_ts=root))
    assert record is not None
    session = await db.sessions.of_thread(record)
    assert session is not None
    users = [e.text for e in session.events if e.author == "user"]
    assert users[:2] == [LONG.strip(), LONG.strip()]
    # Compaction ran over the oversized turns, sending each clipped.
    assert any(e.author == COMPACTION_AUTHOR for e in session.events)
    [summary_request] = compaction.requests
    assert len(summary_request.contents[0].text) < 3 * 4_000 + 2_000


def test_bounded_input_interrupted_calls_get_an_interrupted_result() -> None:
    call = FunctionCall(id="call_1", name="lookup_order", args={"order": "4411"})
    events = [
        Event(author="user", invocation_id="inv1", parts=(Part(text="where is 4411"),)),
        Event(author="billing_agent", invocation_id="inv1", parts=(Part(function_call=call),)),
    ]
    [closing] = interrupted_responses(events)
    assert closing.author == "billing_agent"
    assert closing.invocation_id == "inv1"
    [response] = closing.function_responses
    assert (response.id, response.response["error"]) == ("call_1", "interrupted")
    assert interrupted_responses([*events, closing]) == []


def _consulting_tree(model: ScriptedModel) -> LlmAgent:
    """A supervisor that consults `order_desk` (an AgentTool) which looks orders up."""

    def lookup_order(order: str) -> dict[str, str]:
        """Look an order up."""
        return {"order": order, "status": "shipped"}

    desk = LlmAgent(name="order_desk", description="Orders.", model=model, tools=[lookup_order])
    return LlmAgent(
        name="support_supervisor",
        description="Front door.",
        instruction="Route the user.",
        model=model,
        tools=[AgentTool(desk)],
    )


async def _thread_session(bot: BotHarness, root: str) -> Session:
    db = bot.services.db
    record = await db.threads.get(ThreadKey(team_id=TEAM, channel_id="D1", thread_ts=root))
    assert record is not None
    session = await db.sessions.of_thread(record)
    assert session is not None
    return session


async def _follow_ups(bot: BotHarness, root: str, turns: int) -> None:
    for n in range(turns):
        await bot.send_event(dm(f"and {n}?", ts=f"{root[:-3]}{n + 201}", thread_ts=root))
        await bot.idle()
        await bot.services.runner.drain()


async def test_bounded_input_a_call_limit_in_an_agent_tool_closes_its_call_compaction_resumes(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    # One call to the AgentTool, then its child looks the order up until the invocation's
    # 25 model calls are spent: the 26th raises ModelCallLimitExceeded inside the tool.
    steps = [call("order_desk", request="Where is order 4411?")]
    steps += [call("lookup_order", order="4411")] * 24
    model = ScriptedModel([*steps, *(f"Answer {n}." for n in range(5))])
    compaction = ScriptedModel(["The user asked about order 4411."] * 2)
    bot = await start_bot(_consulting_tree(model), compaction_model=compaction)
    root = "1700000800.000100"
    await bot.send_event(dm("where is order 4411?", ts=root))
    await bot.idle()
    assert len(model.requests) == 25
    session = await _thread_session(bot, root)
    assert session.events[-1].error_code == "model_call_limit"
    assert interrupted_responses(session.events) == []
    await _follow_ups(bot, root, 5)
    assert shown(answers(slack)[-1]).endswith("Answer 4.")
    session = await _thread_session(bot, root)
    assert any(e.author == COMPACTION_AUTHOR for e in session.events)
    assert compaction.requests


async def test_bounded_input_a_shutdown_during_a_tool_call_closes_it_and_compaction_resumes(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    started, never = asyncio.Event(), asyncio.Event()

    async def lookup_order(order: str) -> dict[str, str]:
        """Look an order up (this one hangs until the shutdown cancels it)."""
        started.set()
        await never.wait()
        return {}

    model = ScriptedModel([call("lookup_order", order="4411"), *(f"Answer {n}." for n in range(3))])
    agent = LlmAgent(name="support_supervisor", model=model, tools=[lookup_order])
    compaction = ScriptedModel(["The user asked about order 4411."])
    first = await start_bot(agent, compaction_model=compaction, shutdown_timeout_seconds=0.2)
    root = "1700000900.000100"
    await first.send_event(dm("where is order 4411?", ts=root))
    await asyncio.wait_for(started.wait(), 5)
    await first.stop()
    # The thread was told, and the cut-off call answered as interrupted.
    assert shown(slack.thread("D1", root)[-1]) == INTERRUPTED_TEXT
    session = await _thread_session(first, root)
    [closing] = [e for e in session.events if e.function_responses]
    assert closing.function_responses[0].response["error"] == "interrupted"
    second = await start_bot(agent, compaction_model=compaction)
    await _follow_ups(second, root, 3)
    assert shown(answers(slack)[-1]).endswith("Answer 2.")
    session = await _thread_session(second, root)
    assert any(e.author == COMPACTION_AUTHOR for e in session.events)
