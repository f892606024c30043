"""End to end: messages in, placeholder then reply out, over real HTTP."""

from __future__ import annotations

from agents.models.scripted import ScriptedModel
from tests.e2e.conftest import StartBot
from tests.e2e.harness import channel_message, dm
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi


def context_text(blocks: list[dict]) -> str:
    return " ".join(el["text"] for b in blocks if b["type"] == "context" for el in b["elements"])


async def test_conversation_dm_gets_placeholder_then_reply_naming_agent(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["Hello! How can I help?"])))
    resp = await bot.send_event(dm("hi there", ts="1700000001.000100"))
    assert resp.status == 200
    await slack.wait_for("chat.update")
    await bot.idle()
    [placeholder] = slack.calls_to("chat.postMessage")
    assert placeholder["thread_ts"] == "1700000001.000100" and placeholder["channel"] == "D1"
    [update] = slack.calls_to("chat.update")
    assert "Hello! How can I help?" in update["blocks"][0]["text"]["text"]
    assert "support_supervisor" in context_text(update["blocks"])


async def test_conversation_channel_mention_starts_thread_session(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["Hi from the channel"])))
    await bot.send_event(
        channel_message("help", ts="1700000002.000100", mention=True, kind="app_mention")
    )
    await slack.wait_for("chat.update")
    await bot.idle()
    [update] = slack.calls_to("chat.update")
    assert "Hi from the channel" in update["text"]
    assert slack.calls_to("chat.postMessage")[0]["thread_ts"] == "1700000002.000100"
