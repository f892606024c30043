"""Every reply is shown and recorded as the agent that owns it, from its first visible
moment, end to end over signed requests and the strict fake Slack with
`CHAT_WRITE_CUSTOMIZE`, on the shipped tree:

- a reply written by a pipeline's step (`fix_writer`) is owned by its workflow
  (`tech_support`, `agents.runner.reply_owner`): the message's username, its
  notification text, its context line, its metadata, a stream's first words and the
  thread's recorded owner all name `tech_support`, posted whole (decide-first, the
  shipped profile) or streamed (a hosted model);
- without a stream (`STREAMING=off`) the placeholder is posted under the bot's own name,
  and the reply of a transfer ends under the agent that wrote it, never the one the
  turn started with; the default (streaming on) shows the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.events import SHOWN_BEFORE, Event
from agents.models.scripted import ScriptedModel, deltas, json_text, transfer
from agents.tree import build_support_tree
from bot.slack.message_ts import message_ts
from bot.slack.render.blocks import THINKING_TEXT
from bot.slack.streaming import speaker_prefix
from storage.threads import ThreadKey
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, BotHarness, channel_message, dm
from tests.e2e.replies import bot_replies, context_text, finished, shown, wait_answers
from tests.e2e.test_reviewed_replies import CRASH, DIAGNOSIS, FIX, all_sent, shipped_bot
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

INVOICE_QUESTION = "How much is my March invoice INV-2291?"
INVOICE_ANSWER = "Your March invoice INV-2291 is 49.00 USD, due on 1 April."


async def recorded_owner(bot: BotHarness, channel: str, root: str) -> str | None:
    """The agent the thread map records as owning the thread's last reply."""
    key = ThreadKey(team_id=TEAM, channel_id=channel, thread_ts=root)
    record = await bot.services.db.threads.get(key)
    assert record is not None
    return record.owner_agent


async def stored_reply(bot: BotHarness, channel: str, root: str, author: str) -> Event:
    """The thread's one stored reply by `author`."""
    key = ThreadKey(team_id=TEAM, channel_id=channel, thread_ts=root)
    record = await bot.services.db.threads.get(key)
    assert record is not None
    session = await bot.services.db.sessions.of_thread(record)
    assert session is not None
    [reply] = [e for e in session.events if e.author == author and e.text]
    return reply


def names_in(slack: FakeSlackApi) -> set[str]:
    """Every username the bot posted or streamed under."""
    return {str(c.args["username"]) for c in slack.calls if c.args.get("username")}


async def test_a_pipeline_reply_posted_whole_is_named_after_its_workflow(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path
) -> None:
    model = ScriptedModel(
        [json_text("tech_support"), DIAGNOSIS, FIX],
        decide_first=True,
        chunk_chars=6,
        chunk_delay=0.1,
    )
    bot = await shipped_bot(slack, start_bot, database, tmp_path, model)
    root = "1700000801.000100"
    slack.add_message("C1", ts=root, text=CRASH, user="U1")
    await bot.send_event(channel_message(CRASH, ts=root, mention=True))
    [answer] = await wait_answers(slack)
    await bot.idle()

    assert shown(answer) == FIX
    [post] = slack.calls_to("chat.postMessage")
    assert post["username"] == "tech_support"
    assert post["text"] == f"tech_support: {FIX} (support_supervisor → tech_support)"
    assert post["metadata"]["event_payload"]["agent"] == "tech_support"
    assert context_text(answer).startswith("*tech_support*")
    assert names_in(slack) == {"tech_support"}
    assert "fix_writer" not in all_sent(slack) and "diagnose" not in all_sent(slack)
    assert await recorded_owner(bot, "C1", root) == "tech_support"
    assert message_ts(await stored_reply(bot, "C1", root, "fix_writer")) == answer["ts"]
    model.assert_complete()


async def test_a_streamed_pipeline_reply_is_named_after_its_workflow(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    """On a hosted model the pipeline's last step streams: the stream starts under
    `tech_support`, and its first words name it."""
    model = ScriptedModel(
        [
            transfer("tech_support"),
            DIAGNOSIS,
            deltas("1. Clear the ", "app's cache. ", "2. Restart ", "the app."),
        ],
        chunk_delay=0.3,
    )
    bot = await start_bot(build_support_tree(model=model), chat_write_customize=True)
    root = "1700000802.000100"
    await bot.send_event(dm(CRASH, ts=root))
    [answer] = await wait_answers(slack)
    await bot.idle()

    [start] = slack.calls_to("chat.startStream")
    assert start["username"] == "tech_support"
    first = next(c["text"] for c in start["chunks"] if c["type"] == "markdown_text")
    assert first.startswith(speaker_prefix("tech_support"))
    assert not slack.calls_to("chat.postMessage")
    assert answer["username"] == "tech_support"
    assert answer["text"] == speaker_prefix("tech_support") + FIX
    assert answer["metadata"]["event_payload"]["agent"] == "tech_support"
    assert "tech_support" in context_text(answer)
    assert "fix_writer" not in context_text(answer)
    assert names_in(slack) == {"tech_support"}
    assert await recorded_owner(bot, "D1", root) == "tech_support"
    model.assert_complete()


@pytest.mark.parametrize("streaming", ["off", "auto"])
async def test_a_transferred_reply_ends_under_the_agent_that_wrote_it(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path, streaming: str
) -> None:
    model = ScriptedModel(
        [
            json_text("billing_agent"),  # the supervisor routes
            json_text("billing_agent"),  # billing_agent answers itself
            INVOICE_ANSWER,
            json_text("no"),  # the review: no refund promised, nothing to consult
        ],
        decide_first=True,
        chunk_chars=6,
        chunk_delay=0.1,
    )
    bot = await shipped_bot(slack, start_bot, database, tmp_path, model, streaming=streaming)
    root = "1700000803.000100"
    await bot.send_event(dm(INVOICE_QUESTION, ts=root))
    [answer] = await wait_answers(slack)
    await bot.idle()

    # The thread holds one message of ours: the reply, under the agent that wrote it.
    assert bot_replies(slack, "D1") == [answer]
    assert shown(answer) == INVOICE_ANSWER
    assert answer["username"] == "billing_agent"
    assert answer["text"].startswith("billing_agent: ")
    assert "billing_agent" in context_text(answer)
    assert "support_supervisor" not in names_in(slack)
    if streaming == "off":
        # The placeholder named no agent: the bot's own name, then the reply anew.
        placeholder, reply = slack.calls_to("chat.postMessage")
        assert placeholder["text"] == THINKING_TEXT and "username" not in placeholder
        [deleted] = slack.calls_to("chat.delete")
        assert deleted["ts"] != answer["ts"]
        assert reply["username"] == "billing_agent"
    # The stored reply cites the message it is shown in, never the deleted placeholder.
    assert message_ts(await stored_reply(bot, "D1", root, "billing_agent")) == answer["ts"]
    assert await recorded_owner(bot, "D1", root) == "billing_agent"
    model.assert_complete()


async def test_a_stream_replaced_by_another_agents_reply_ends_under_that_agent(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    """A hosted supervisor streams a pretend transfer, which becomes the real one: its
    streamed message named the supervisor, so billing_agent's reply is posted anew under
    its own name, and what the customer had been shown is stored with it."""
    model = ScriptedModel(
        [
            deltas("Understood. I will ", "transfer your issue ", "to the billing_agent agent."),
            "Your refund is on its way.",
        ],
        chunk_delay=0.3,
    )
    bot = await start_bot(support_tree(model), chat_write_customize=True)
    root = "1700000804.000100"
    await bot.send_event(dm("I was charged twice", ts=root))
    await slack.wait_for(lambda api: any(finished(m) for m in bot_replies(api, "D1")))
    await bot.idle()

    [start] = slack.calls_to("chat.startStream")
    assert start["username"] == "support_supervisor"  # what the customer saw first
    [answer] = bot_replies(slack, "D1")  # the streamed message is gone
    assert answer["ts"] != start.get("ts")
    assert shown(answer) == "Your refund is on its way."
    assert answer["username"] == "billing_agent"
    assert answer["text"].startswith("billing_agent: ")
    [deleted] = slack.calls_to("chat.delete")
    assert deleted["ts"] != answer["ts"]
    assert await recorded_owner(bot, "D1", root) == "billing_agent"
    # Stored as shown: in the new message, after what the customer had seen first.
    reply = await stored_reply(bot, "D1", root, "billing_agent")
    assert message_ts(reply) == answer["ts"]
    assert reply.custom_metadata[SHOWN_BEFORE] == (
        "Understood. I will transfer your issue to the billing_agent agent."
    )
    model.assert_complete()
