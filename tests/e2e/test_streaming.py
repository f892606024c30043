"""Streamed replies over real HTTP: the stream's calls in order, the task timeline, the
text made safe before it is sent, and the placeholder flow where Slack will not stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.models.base import ModelError
from agents.models.scripted import ScriptedModel, deltas, transfer
from bot.slack.render.blocks import FAILURE_TEXT
from tests.e2e.conftest import StartBot
from tests.e2e.harness import channel_message, dm
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_streams import STREAM_METHODS

POSTS = ("chat.postMessage", "chat.update", *STREAM_METHODS)


def posting_calls(slack: FakeSlackApi) -> list[tuple[str, dict[str, Any]]]:
    return [(c.method, c.args) for c in slack.calls if c.method in POSTS]


def kinds(args: dict[str, Any]) -> list[str]:
    """What one stream call carries: `text` and/or each task's title, in order."""
    found = ["text"] if args.get("markdown_text") else []
    for chunk in args.get("chunks") or []:
        found.append("text" if chunk["type"] == "markdown_text" else f"task:{chunk['title']}")
    return found


def context_text(blocks: list[dict[str, Any]] | None) -> str:
    return " ".join(
        el["text"] for b in blocks or [] if b["type"] == "context" for el in b["elements"]
    )


def streamed_text(slack: FakeSlackApi) -> list[str]:
    """Every piece of text the bot streamed, in the order it was sent."""
    pieces = []
    for method, args in posting_calls(slack):
        if method in STREAM_METHODS:
            pieces += [c["text"] for c in args.get("chunks") or [] if c["type"] == "markdown_text"]
    return pieces


async def test_dm_transferred_to_billing_streams_start_task_text_stop(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel(
        [transfer("billing_agent"), deltas("Your refund <!chan", "nel> is on ", "its way.")],
        chunk_delay=0.3,
    )
    bot = await start_bot(support_tree(model), stream_append_seconds=1.0)
    await bot.send_event(dm("I was charged twice", ts="1700000001.000100"))
    await slack.wait_for("chat.stopStream")
    await bot.idle()

    calls = posting_calls(slack)
    methods = [m for m, _ in calls]
    assert methods[0] == "chat.startStream" and methods[-1] == "chat.stopStream"
    assert set(methods) == {"chat.startStream", "chat.appendStream", "chat.stopStream"}
    start = calls[0][1]
    assert (start["channel"], start["thread_ts"]) == ("D1", "1700000001.000100")
    assert start["task_display_mode"] == "timeline"
    shown = [k for _, args in calls[1:] for k in kinds(args)]
    assert shown[0] == "task:support_supervisor → billing_agent"
    assert shown[1:] and set(shown[1:]) == {"text"}
    # The first text at once, then at most one call per STREAM_APPEND_SECONDS.
    assert methods.count("chat.appendStream") == 2
    assert kinds(calls[-1][1]) == ["text"]  # the rest came with the stop

    # Nothing sent ever held a live mention, though the model split one across deltas.
    assert all("<!" not in piece for piece in streamed_text(slack))
    [message] = [m for m in slack.messages["D1"].values() if m.get("bot_id")]
    assert message["text"] == "Your refund &lt;!channel&gt; is on its way."
    assert not message["streaming"]
    assert "billing_agent" in context_text(message["blocks"])
    assert "support_supervisor → billing_agent" in context_text(message["blocks"])


@pytest.mark.parametrize("way", ["refused", "setting"])
async def test_without_streaming_the_same_reply_comes_by_placeholder_and_update(
    slack: FakeSlackApi, start_bot: StartBot, way: str
) -> None:
    model = ScriptedModel([transfer("billing_agent"), "Your refund is on its way."])
    settings: dict[str, Any] = {}
    if way == "refused":
        slack.stream_refusal = "not_allowed"
    else:
        settings["streaming"] = "off"
    bot = await start_bot(support_tree(model), **settings)
    await bot.send_event(dm("I was charged twice", ts="1700000001.000100"))
    await slack.wait_for("chat.update")
    await bot.idle()
    methods = [m for m, _ in posting_calls(slack)]
    tried = ["chat.startStream"] if way == "refused" else []  # answered not_allowed
    assert methods == [*tried, "chat.postMessage", "chat.update"]
    [update] = slack.calls_to("chat.update")
    assert "Your refund is on its way." in update["text"]
    assert "billing_agent" in context_text(update["blocks"])


async def test_a_channel_thread_streams_to_its_recipient(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["Hi from the channel"])))
    await bot.send_event(channel_message("help", ts="1700000002.000100", mention=True))
    await slack.wait_for("chat.stopStream")
    await bot.idle()
    [start] = slack.calls_to("chat.startStream")
    assert (start["recipient_user_id"], start["recipient_team_id"]) == ("U1", "T1")
    [message] = [m for m in slack.messages["C1"].values() if m.get("bot_id")]
    assert message["text"] == "Hi from the channel"
    assert "support_supervisor" in context_text(message["blocks"])


async def test_a_failed_model_call_ends_the_stream_with_the_notice(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    def broken(_request: object) -> str:
        raise ModelError("the model server went away", code="model_unavailable")

    bot = await start_bot(support_tree(ScriptedModel([transfer("billing_agent"), broken])))
    await bot.send_event(dm("I was charged twice", ts="1700000001.000100"))
    await slack.wait_for("chat.update")
    await bot.idle()
    methods = [m for m, _ in posting_calls(slack)]
    assert methods[0] == "chat.startStream" and methods[-2:] == ["chat.stopStream", "chat.update"]
    [stop] = slack.calls_to("chat.stopStream")
    assert [c["status"] for c in stop.get("chunks") or []] in ([], ["error"])
    [message] = [m for m in slack.messages["D1"].values() if m.get("bot_id")]
    assert message["text"] == FAILURE_TEXT
    assert not message["streaming"]


async def test_a_long_answer_stays_within_slacks_limits(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    paragraphs = [f"Paragraph {n}: " + "refund details " * 30 for n in range(20)]
    answer = "\n\n".join(paragraphs)
    bot = await start_bot(support_tree(ScriptedModel([answer], chunk_chars=200)))
    await bot.send_event(dm("explain everything", ts="1700000001.000100"))
    await slack.wait_for("chat.stopStream")
    await bot.idle()
    assert sum(len(piece) for piece in streamed_text(slack)) <= 3000
    mine = [m for m in slack.thread("D1", "1700000001.000100") if m.get("bot_id")]
    assert len(mine) > 1 and not any(m.get("streaming") for m in mine)
    assert all(len(json.dumps(m.get("blocks"))) < 40_000 for m in mine)
    shown = "\n\n".join(
        b["text"]["text"] for m in mine for b in m["blocks"] or [] if b["type"] == "section"
    )
    assert [p.split(":")[0] for p in paragraphs] == [
        line.split(":")[0] for line in shown.split("\n\n") if line.startswith("Paragraph")
    ]
    assert "support_supervisor" in context_text(mine[0]["blocks"])
