"""What the assistant panel says, built from any tree's names and descriptions."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from agents.events import Event, EventActions, FunctionCall, FunctionResponse, Part
from agents.llm.agent import LlmAgent
from agents.tree import build_support_tree
from bot.slack.assistant.describe import (
    agent_descriptions,
    headline,
    suggested_prompts,
    working_status,
)
from bot.slack.assistant.panel import Panel
from bot.slack.assistant.status import PanelStatus, TurnStatus
from bot.slack.messages import IncomingMessage
from storage.threads import ThreadRecord


def test_shipped_tree_gives_one_prompt_per_specialist() -> None:
    root = build_support_tree(model="scripted")
    assert suggested_prompts(root) == [
        {"title": "Money", "message": "I have a question about money."},
        {
            "title": "Getting the product to work",
            "message": "I have a question about getting the product to work.",
        },
    ]
    # AgentTool agents are separate instances, outside the tree: their statuses too.
    assert {"policy_checker", "diagnose", "fix_writer"} <= set(agent_descriptions(root))


def test_any_tree_gets_its_own_prompts_at_most_four() -> None:
    specialists = [
        LlmAgent(name=f"desk_{n}", description=f"API errors of kind {n}; and more.")
        for n in range(6)
    ]
    root = LlmAgent(name="front", description="Front.", sub_agents=specialists)
    prompts = suggested_prompts(root)
    assert len(prompts) == 4
    assert prompts[0] == {
        "title": "API errors of kind 0",
        "message": "I have a question about API errors of kind 0.",
    }
    assert suggested_prompts(LlmAgent(name="alone", description="Everything.")) == []


def test_headline_and_status_come_from_the_description() -> None:
    assert headline("The front door: greetings, thanks.") == "The front door"
    assert headline("  Invoices, refunds\n and charges. ") == "Invoices, refunds and charges"
    status, lines = working_status("billing_agent", "Invoices and refunds.")
    assert status == "billing_agent is checking your request…"
    assert lines == [status, "billing_agent handles invoices and refunds…"]
    assert working_status("quiet", "") == (
        "quiet is checking your request…",
        ["quiet is checking your request…"],
    )


class _Recorder:
    def __init__(self) -> None:
        self.statuses: list[str] = []

    async def assistant_threads_setStatus(self, **args: object) -> None:
        self.statuses.append(str(args["status"]))


async def test_status_follows_transfers_and_consultations() -> None:
    recorder = _Recorder()
    status = _status(recorder)
    call = FunctionCall(id="c1", name="policy", args={"request": "refund?"})
    response = FunctionResponse(id="c1", name="policy", response={"result": "ALLOWED"})
    steps = [
        Event(author="sup", actions=EventActions(transfer_to_agent="billing")),
        Event(author="billing", parts=(Part(function_call=call),)),
        Event(author="billing", parts=(Part(function_response=response),)),
    ]
    status.start()
    for event in steps:
        await asyncio.sleep(0)  # the background sender gets to run
        status.observe(event)
    await asyncio.sleep(0)
    await status.close()
    assert recorder.statuses == [
        "sup is checking your request…",
        "billing is checking your request…",
        "billing is consulting policy…",
        "billing is checking your request…",
        "",
    ]


async def test_status_latest_wins_and_nothing_shown_needs_no_clearing() -> None:
    recorder = _Recorder()
    status = _status(recorder)
    status.show("sup")
    status.show("billing")
    await status.close()
    assert recorder.statuses == []
    status.show("sup")
    status.show("billing")
    await asyncio.sleep(0)
    await status.close()
    assert recorder.statuses == ["billing is checking your request…", ""]


def _status(recorder: _Recorder) -> PanelStatus:
    descriptions = {"sup": "Front.", "billing": "Money.", "policy": "Rules."}
    return PanelStatus(
        recorder,  # type: ignore[arg-type]
        channel_id="D1",
        thread_ts="1.0",
        descriptions=descriptions,
        first_agent="sup",
    )


def test_first_status_names_the_agent_that_keeps_the_thread() -> None:
    locked = LlmAgent(name="locked", description="Locked.", disallow_transfer_to_parent=True)
    billing = LlmAgent(name="billing", description="Money.")
    root = LlmAgent(name="sup", description="Front.", sub_agents=[billing, locked])
    services = SimpleNamespace(runner=SimpleNamespace(agent=root), client=None)
    panel = Panel(services)  # type: ignore[arg-type]
    msg = IncomingMessage(
        team_id="T1", channel="D1", channel_type="im", user="U1", text="hi",
        ts="2.0", thread_ts="1.0", mentioned=False,
    )  # fmt: skip

    def record(owner: str | None) -> ThreadRecord:
        return ThreadRecord(
            team_id="T1", channel_id="D1", thread_ts="1.0", session_id="s", app_name="a",
            user_id="U1", owner_agent=owner, last_activity_at=1.0, created_at=1.0,
        )  # fmt: skip

    def first(owner: str | None) -> str:
        status = panel.status_for(msg, record(owner))
        assert isinstance(status, PanelStatus)
        return status._first_agent

    # The last answering agent keeps the thread, unless it may not hand back to its parent.
    owners = (None, "billing", "locked", "gone")
    assert [first(owner) for owner in owners] == ["sup", "billing", "sup", "sup"]
    # A top-level direct message is not in a panel thread: no status line.
    top_level = IncomingMessage(**{**msg.to_record(), "thread_ts": None})
    assert type(panel.status_for(top_level, record(None))) is TurnStatus
