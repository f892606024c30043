"""End to end: the Agents & AI Apps panel over real HTTP (signed events, fake Web API)."""

from __future__ import annotations

import asyncio
from typing import Any

from agents.models.base import LlmRequest, LlmResponse
from agents.models.scripted import ScriptedModel, json_text, transfer
from agents.summary.service import SummaryService
from bot.digests.job import DigestJob
from storage.threads import ThreadKey
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, dm
from tests.e2e.replies import wait_answers
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

PANEL = "D9"


def thread_started(thread_ts: str, *, user: str = "U1") -> dict[str, Any]:
    """Slack's `assistant_thread_started` for a new panel thread."""
    return {
        "type": "assistant_thread_started",
        "assistant_thread": {
            "user_id": user,
            "context": {"channel_id": "C1", "team_id": TEAM, "enterprise_id": None},
            "channel_id": PANEL,
            "thread_ts": thread_ts,
        },
        "event_ts": thread_ts,
    }


class ThinkingModel(ScriptedModel):
    """A scripted model that takes a moment per call, as a real one does: long enough for
    the panel to show each agent while it works (the status is latest-wins, so an
    instant turn may finish before an earlier status is even sent)."""

    async def generate(self, request: LlmRequest) -> LlmResponse:
        await asyncio.sleep(0.5)
        return await super().generate(request)


def methods(slack: FakeSlackApi) -> list[tuple[str, dict[str, Any]]]:
    return [(c.method, c.args) for c in slack.calls if c.method != "auth.test"]


async def test_panel_thread_started_sets_title_and_prompts_from_the_tree(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])))
    resp = await bot.send_event(thread_started("1700000500.000100"))
    assert resp.status == 200
    await slack.wait_for("assistant.threads.setSuggestedPrompts")
    await bot.idle()
    [title] = slack.calls_to("assistant.threads.setTitle")
    assert (title["channel_id"], title["thread_ts"]) == (PANEL, "1700000500.000100")
    assert title["title"] == "Conversation with support_supervisor"
    [prompts] = slack.calls_to("assistant.threads.setSuggestedPrompts")
    assert prompts["thread_ts"] == "1700000500.000100"
    # One prompt per specialist (the root's one sub-agent here), from its description.
    assert prompts["prompts"] == [
        {
            "title": "Invoices, refunds and charges",
            "message": "I have a question about invoices, refunds and charges.",
        }
    ]


async def test_panel_message_streams_its_reply_between_the_status_and_its_clearing(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    """The shipped configuration: a panel message shows the working agent, then its reply
    streams (its first text starts it, the hand-off with it, as a task). Every status
    (the specialist at work too) was set before that first text, whose message clears
    it, as Slack does when the app posts in the thread."""
    model = ThinkingModel(
        [transfer("billing_agent"), "Your refund is on its way."], chunk_delay=0.2
    )
    bot = await start_bot(support_tree(model))
    root = "1700000610.000100"
    await bot.send_event(thread_started(root))
    await bot.send_event(
        dm("I was charged twice", ts="1700000611.000100", thread_ts=root, channel=PANEL)
    )
    [answer] = await wait_answers(slack)
    await bot.idle()

    calls = methods(slack)
    order = [m for m, _ in calls]
    start, stop = order.index("chat.startStream"), order.index("chat.stopStream")
    statuses = [(i, a["status"]) for i, (m, a) in enumerate(calls) if m.endswith("setStatus")]
    assert statuses[0][1] == "support_supervisor is checking your request…"
    assert "billing_agent is checking your request…" in [text for _, text in statuses]
    assert all(i < start for i, text in statuses if text) and stop > start
    assert not any(m == "chat.postMessage" for m in order)  # no placeholder
    streamed = [a for m, a in calls if m in ("chat.startStream", "chat.appendStream")]
    tasks = [c for a in streamed for c in a.get("chunks") or [] if c.get("type") != "markdown_text"]
    assert any("billing_agent" in str(task) for task in tasks)
    assert calls[stop][1]["ts"] == answer["ts"]  # the streamed message is the answer
    assert all(a["thread_ts"] == root for m, a in calls if m == "chat.startStream")
    assert slack.statuses == {}  # no status line is left under the thread


async def test_panel_reply_complete_at_once_takes_the_status_with_it(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    """The common turn: the status shows while the agent works, the reply (complete at
    once) is posted whole, and Slack clears the status with that post: two calls."""
    bot = await start_bot(support_tree(ScriptedModel(["Hello from the panel."])))
    root = "1700000620.000100"
    await bot.send_event(dm("hi", ts="1700000621.000100", thread_ts=root, channel=PANEL))
    [answer] = await wait_answers(slack)
    await bot.idle()
    posts = [(m, a.get("status")) for m, a in methods(slack) if not m.startswith("auth.")]
    assert posts == [
        ("assistant.threads.setStatus", "support_supervisor is checking your request…"),
        ("chat.postMessage", None),
    ]
    assert answer["thread_ts"] == root and "Hello from the panel." in answer["text"]
    assert slack.statuses == {}


async def test_panel_message_shows_the_working_agent_then_the_reply(
    slack: FakeSlackApi, start_bot: StartBot, database: Any
) -> None:
    model = ThinkingModel(
        [transfer("billing_agent"), "Your refund is on its way.", "It was INV-9."]
    )
    # Today's placeholder flow (streamed panel replies are tests/e2e's streaming tests').
    bot = await start_bot(support_tree(model), streaming="off")
    root = "1700000600.000100"
    await bot.send_event(thread_started(root))
    await bot.send_event(
        dm("I was charged twice", ts="1700000601.000100", thread_ts=root, channel=PANEL)
    )
    await slack.wait_for("chat.update")
    await bot.idle()

    calls = methods(slack)
    statuses = [(i, a["status"]) for i, (m, a) in enumerate(calls) if m.endswith("setStatus")]
    [(placeholder, _)] = [(i, a) for i, (m, a) in enumerate(calls) if m == "chat.postMessage"]
    [(reply, update)] = [(i, a) for i, (m, a) in enumerate(calls) if m == "chat.update"]
    assert "Your refund is on its way." in update["text"]
    working = [text for i, text in statuses if placeholder < i < reply]
    # The agent the message went to first, then the one it was transferred to.
    assert working == [
        "support_supervisor is checking your request…",
        "billing_agent is checking your request…",
    ]
    first = next(a for m, a in calls if m.endswith("setStatus"))
    assert first["loading_messages"] == [
        "support_supervisor is checking your request…",
        "support_supervisor handles front door…",
    ]
    # Once the reply is shown, the status line is cleared.
    assert statuses[-1][1] == "" and statuses[-1][0] > reply
    assert all(a["thread_ts"] == root for m, a in calls if m.endswith("setStatus"))

    # The panel thread is a session like any other: the next message goes on with
    # billing_agent, and the thread is in the thread map for digests and commands.
    await bot.send_event(
        dm("which invoice?", ts="1700000602.000100", thread_ts=root, channel=PANEL)
    )
    await slack.wait_for("chat.update", count=2)
    await bot.idle()
    assert "INV-9" in slack.calls_to("chat.update")[1]["text"]
    second = [a["status"] for m, a in methods(slack)[len(calls) :] if m.endswith("setStatus")]
    assert second == ["billing_agent is checking your request…", ""]
    record = await database.threads.get(ThreadKey(team_id=TEAM, channel_id=PANEL, thread_ts=root))
    assert record is not None and record.status == "active"
    model.assert_complete()


async def test_panel_context_change_is_acknowledged_and_writes_nothing(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])))
    event = {**thread_started("1700000700.000100"), "type": "assistant_thread_context_changed"}
    resp = await bot.send_event(event)
    assert resp.status == 200
    await bot.idle()
    assert methods(slack) == []


async def test_status_failure_never_stops_the_reply(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["Hello from the panel."])), streaming="off")
    slack.fail("assistant.threads.setStatus", status=400, times=10)
    root = "1700000800.000100"
    await bot.send_event(dm("hi", ts="1700000801.000100", thread_ts=root, channel=PANEL))
    await slack.wait_for("chat.update")
    await bot.idle()
    assert "Hello from the panel." in slack.calls_to("chat.update")[0]["text"]


async def test_messages_outside_the_panel_get_no_status(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["Hi in a DM."])))
    await bot.send_event(dm("hi", ts="1700000901.000100"))
    await wait_answers(slack)
    await bot.idle()
    assert slack.calls_to("assistant.threads.setStatus") == []


async def test_panel_events_without_their_thread_are_refused_not_retried(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])))
    for kind in ("assistant_thread_started", "assistant_thread_context_changed"):
        for thread in ({"channel_id": PANEL}, {"thread_ts": "1.2"}, {}, None):
            event: dict[str, Any] = {"type": kind}
            if thread is not None:
                event["assistant_thread"] = thread
            # Signed but malformed: a 400, where a 500 would have Slack send it again.
            assert (await bot.send_event(event)).status == 400
    await bot.idle()
    assert methods(slack) == []


async def test_panel_thread_is_summarised_and_digested_like_any_thread(
    slack: FakeSlackApi, start_bot: StartBot, database: Any
) -> None:
    record = {
        "goal": "Get a double charge refunded",
        "facts": [{"text": "The user was charged twice", "sources": ["e1"]}],
        "decisions": [],
        "commitments": [],
        "open_questions": [],
    }
    summarizer = SummaryService(ScriptedModel([json_text(record), json_text(record)]))
    bot = await start_bot(
        support_tree(ScriptedModel(["A refund is on its way."])),
        summarizer=summarizer,
        streaming="off",
    )
    slack.members[PANEL] = ["U1", "UBOT"]  # a DM's members: the person and the bot
    root = "1700001300.000100"
    await bot.send_event(thread_started(root))
    await bot.send_event(
        dm("I was charged twice", ts="1700001301.000100", thread_ts=root, channel=PANEL)
    )
    await slack.wait_for("chat.update")
    await bot.idle()

    link = f"https://fake.slack.com/archives/{PANEL}/p{root.replace('.', '')}"
    assert (await bot.send_command("/summary", link, channel=PANEL)).status == 200
    await bot.idle()
    [shown] = slack.calls_to("response_url")
    assert "double charge" in shown["text"]

    job = DigestJob(
        db=database, summarizer=summarizer, client=bot.services.client,
        lead_channel="CLEAD", idle_after=0, owner=bot.services.owner,
    )  # fmt: skip
    [digest] = await job.run_once()
    assert (digest.outcome, digest.channel_id, digest.thread_ts) == ("posted", PANEL, root)
