"""Streamed replies over real HTTP: the stream's calls in order (started with the
reply's first text, under its agent), the task timeline, the text made safe before it is
sent, a reply complete at once posted whole, and the placeholder flow where streaming is
off."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agents.events import SHOWN_BEFORE
from agents.models.base import LlmRequest, LlmResponse, ModelError
from agents.models.scripted import ScriptedModel, deltas, transfer
from agents.summary.transcript import render_transcript
from bot.slack.message_ts import message_ts
from bot.slack.render.blocks import FAILURE_TEXT
from bot.slack.streaming import is_complete_reply, speaker_prefix
from storage.threads import ThreadKey
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
        [
            transfer("billing_agent"),
            deltas(
                "Your refund <!chan", "nel> is on ", "its way", " and should", " be there soon."
            ),
        ],
        chunk_delay=0.4,
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
    # The reply's first text starts the message, named after its agent, with the hand-off.
    assert kinds(start) == ["text", "task:support_supervisor → billing_agent"]
    assert start["chunks"][0]["text"].startswith(speaker_prefix("billing_agent"))
    shown = [k for _, args in calls[1:] for k in kinds(args)]
    assert shown and set(shown) == {"text"}
    # The first text once it gathered FIRST_TEXT_WAIT_S, then at most one call per
    # STREAM_APPEND_SECONDS; whatever is left comes with the stop.
    appends = [c for c in slack.calls if c.method == "chat.appendStream"]
    assert appends
    assert all(b.at - a.at >= 0.9 for a, b in itertools.pairwise(appends))
    words = "Your refund &lt;!channel&gt; is on its way and should be there soon."
    assert "".join(streamed_text(slack)) == speaker_prefix("billing_agent") + words
    assert kinds(calls[-1][1]) == ["text"]

    # Nothing sent ever held a live mention, though the model split one across deltas.
    assert all("<!" not in piece for piece in streamed_text(slack))
    [message] = [m for m in slack.messages["D1"].values() if m.get("bot_id")]
    assert message["text"] == speaker_prefix("billing_agent") + words
    assert not message["streaming"]
    assert "billing_agent" in context_text(message["blocks"])
    assert "support_supervisor → billing_agent" in context_text(message["blocks"])


@pytest.mark.parametrize("way", ["refused", "setting"])
async def test_without_streaming_the_same_reply_comes_by_placeholder_and_update(
    slack: FakeSlackApi, start_bot: StartBot, way: str
) -> None:
    model = ScriptedModel(
        [transfer("billing_agent"), "Your refund is on its way."], chunk_delay=0.2
    )
    settings: dict[str, Any] = {}
    if way == "refused":
        slack.stream_refusal = "not_allowed"
    else:
        settings["streaming"] = "off"
    bot = await start_bot(support_tree(model), **settings)
    await bot.send_event(dm("I was charged twice", ts="1700000001.000100"))
    await slack.wait_for(lambda api: len(posting_calls(api)) >= 2)
    await bot.idle()
    methods = [m for m, _ in posting_calls(slack)]
    if way == "refused":
        # Tried with the first text, answered not_allowed: the reply is posted whole.
        assert methods == ["chat.startStream", "chat.postMessage"]
        [reply] = slack.calls_to("chat.postMessage")
    else:
        assert methods == ["chat.postMessage", "chat.update"]
        [reply] = slack.calls_to("chat.update")
    assert "Your refund is on its way." in reply["text"]
    assert "billing_agent" in context_text(reply["blocks"])


async def test_a_channel_thread_streams_to_its_recipient(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel([deltas("Hi from ", "the ", "channel")], chunk_delay=0.2)
    bot = await start_bot(support_tree(model))
    await bot.send_event(channel_message("help", ts="1700000002.000100", mention=True))
    await slack.wait_for("chat.stopStream")
    await bot.idle()
    [start] = slack.calls_to("chat.startStream")
    assert (start["recipient_user_id"], start["recipient_team_id"]) == ("U1", "T1")
    [message] = [m for m in slack.messages["C1"].values() if m.get("bot_id")]
    assert message["text"] == speaker_prefix("support_supervisor") + "Hi from the channel"
    assert "support_supervisor" in context_text(message["blocks"])


class BreaksMidStream(ScriptedModel):
    """A model whose stream shows some text, then fails (a server that went away): the
    text already shown cannot be retried (`agents.models.litellm_stream`)."""

    async def generate_stream(self, request: LlmRequest) -> AsyncIterator[LlmResponse]:
        shown = False
        async for response in super().generate_stream(request):
            if shown and not response.partial:
                raise ModelError("the model server went away", code="model_unavailable")
            shown = shown or response.partial
            yield response


async def test_a_failed_model_call_ends_the_stream_with_the_notice_and_keeps_what_was_shown(
    slack: FakeSlackApi, start_bot: StartBot, database: Any
) -> None:
    """The customer saw the start of a reply, then the failure notice replaced it: the
    stored failure records what they were shown, and the summary transcript shows it."""
    model = BreaksMidStream(
        [transfer("billing_agent"), deltas("I've refunded ", "your duplicate ", "charge")],
        chunk_delay=0.3,
    )
    bot = await start_bot(support_tree(model))
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
    shown = "".join(streamed_text(slack)).removeprefix(speaker_prefix("billing_agent"))
    assert shown.startswith("I've refunded ")
    key = ThreadKey(team_id="T1", channel_id="D1", thread_ts="1700000001.000100")
    record = await database.threads.get(key)
    assert record is not None
    session = await database.sessions.of_thread(record)
    assert session is not None
    [failure] = [e for e in session.events if e.error_code == "model_unavailable"]
    assert failure.custom_metadata[SHOWN_BEFORE] == shown
    transcript = render_transcript(list(session.events)).text
    assert (
        f"[{failure.id}] billing_agent SHOWN TO THE CUSTOMER FIRST, THEN REPLACED: " in transcript
    )
    assert shown.strip() in transcript


async def test_a_long_answer_stays_within_slacks_limits(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    paragraphs = [f"Paragraph {n}: " + "refund details " * 30 for n in range(20)]
    answer = "\n\n".join(paragraphs)
    model = ScriptedModel([answer], chunk_chars=200, chunk_delay=0.05)
    bot = await start_bot(support_tree(model))
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


@pytest.mark.parametrize("where", ["dm", "channel"])
async def test_a_reply_complete_at_once_is_posted_whole_in_one_call(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, where: str
) -> None:
    """A reply the model gives in one piece needs no stream: one chat.postMessage, with
    the context line, the feedback buttons and the complete-reply metadata, and the
    stored reply cites that message."""
    bot = await start_bot(support_tree(ScriptedModel(["Your refund is on its way."])))
    if where == "dm":
        channel, event = "D1", dm("I was charged twice", ts="1700000003.000100")
    else:
        channel = "C1"
        event = channel_message("charged twice", ts="1700000003.000100", mention=True)
    await bot.send_event(event)
    await slack.wait_for("chat.postMessage")
    await bot.idle()
    assert [m for m, _ in posting_calls(slack)] == ["chat.postMessage"]
    [post] = slack.calls_to("chat.postMessage")
    assert post["thread_ts"] == "1700000003.000100"
    assert "Your refund is on its way." in post["text"]
    assert "support_supervisor" in context_text(post["blocks"])
    assert any(b["type"] == "context_actions" for b in post["blocks"])  # feedback
    assert is_complete_reply(post, None)
    [message] = [m for m in slack.messages[channel].values() if m.get("bot_id")]
    key = ThreadKey(team_id="T1", channel_id=channel, thread_ts="1700000003.000100")
    record = await database.threads.get(key)
    assert record is not None
    session = await database.sessions.of_thread(record)
    assert session is not None
    [reply] = [e for e in session.events if e.author == "support_supervisor"]
    assert message_ts(reply) == message["ts"]


async def test_streamed_links_show_their_real_host(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    dishonest = "Log in at [https://bank.example.com/login](https://evil.example/steal) please."
    model = ScriptedModel([dishonest], chunk_chars=12, chunk_delay=0.05)
    bot = await start_bot(support_tree(model))
    await bot.send_event(dm("how do I log in?", ts="1700000004.000100"))
    await slack.wait_for("chat.stopStream")
    await bot.idle()
    assert slack.calls_to("chat.startStream")  # streamed, not posted whole
    [message] = [m for m in slack.messages["D1"].values() if m.get("bot_id")]
    assert "[https://evil.example/steal](https://evil.example/steal)" in message["text"]
    assert "bank.example.com" not in "".join(streamed_text(slack))


async def test_the_first_text_shows_while_the_model_pauses(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    """The first words start the stream once they gathered FIRST_TEXT_WAIT_S, though no
    later delta comes to trigger it (a model that pauses after them)."""
    model = ScriptedModel([deltas("Checking ", "your refund now.")], chunk_delay=1.0)
    bot = await start_bot(support_tree(model))
    await bot.send_event(dm("where is my refund?", ts="1700000005.000100"))
    await slack.wait_for("chat.stopStream")
    await bot.idle()
    [start] = [c for c in slack.calls if c.method == "chat.startStream"]
    [stop] = [c for c in slack.calls if c.method == "chat.stopStream"]
    first = start.args["chunks"][0]["text"]
    assert (
        kinds(start.args) == ["text"]
        and first == speaker_prefix("support_supervisor") + "Checking "
    )
    assert stop.at - start.at >= 0.5  # shown during the pause, not with the rest
    [message] = [m for m in slack.messages["D1"].values() if m.get("bot_id")]
    assert message["text"] == speaker_prefix("support_supervisor") + "Checking your refund now."
