"""A streamed reply rides on slack_sdk's stream helper (`AsyncWebClient.chat_stream`,
`AsyncChatStream`), over real HTTP to the fake Web API: the stream calls in order, the
text escaped before any of it is sent, the hand-offs and consultations as task chunks,
the message started by the first text under its agent and recorded as it starts, and
the rewrite rule."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from agents.events import Event, EventActions, FunctionCall, FunctionResponse, Part
from bot.slack.messages import IncomingMessage
from bot.slack.streaming import SlackStream, is_complete_reply, open_stream, speaker_prefix
from storage.threads import ThreadKey
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_streams import STREAM_METHODS

ROOT = "1700000001.000100"
KEY = ThreadKey(team_id="T1", channel_id="D1", thread_ts=ROOT)
MSG = IncomingMessage("T1", "D1", "im", "U1", "I was charged twice", ROOT, None, mentioned=False)
CONSULT = FunctionCall(id="c1", name="policy_checker", args={"request": "refund?"})
CONSULTED = FunctionResponse(id="c1", name="policy_checker")
HANDOFF = EventActions(transfer_to_agent="billing_agent")


class HelperClient(AsyncWebClient):
    """The Web API client, keeping each stream helper it hands out."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.helpers: list[AsyncChatStream] = []

    async def chat_stream(self, **kwargs: Any) -> AsyncChatStream:  # type: ignore[override]
        helper = await super().chat_stream(**kwargs)
        self.helpers.append(helper)
        return helper


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi() as api:
        yield api


def said(author: str, **fields: Any) -> Event:
    return Event(author=author, invocation_id="inv1", **fields)


def delta(text: str) -> Event:
    return said("billing_agent", parts=(Part(text=text),), partial=True)


def answer(text: str, event_id: str) -> Event:
    return said("billing_agent", id=event_id, parts=(Part(text=text),))


async def streamed(
    slack: FakeSlackApi, opened: list[tuple[str, int]]
) -> tuple[SlackStream, HelperClient]:
    """A stream of the reply to `MSG` through a `HelperClient`; `opened` gets the
    started message's ts with the number of calls Slack had seen by then."""
    client = HelperClient(token="xoxb-test", base_url=slack.url)

    async def record(ts: str) -> None:
        opened.append((ts, len(slack.calls)))

    # A long append interval: after its first flush, text goes out with tasks or the stop.
    stream = await open_stream(
        client,
        KEY,
        MSG,
        identity=lambda agent: {"username": agent},
        owner_of=lambda agent: agent,
        limit=3000,
        interval=600,
        steps=frozenset(),
        names=frozenset({"support_supervisor", "billing_agent", "policy_checker"}),
        opened=record,
    )
    assert stream is not None
    return stream, client


def stream_calls(slack: FakeSlackApi) -> list[tuple[str, dict[str, Any]]]:
    return [(c.method, c.args) for c in slack.calls if c.method in STREAM_METHODS]


def texts(args: dict[str, Any]) -> list[str]:
    return [c["text"] for c in args.get("chunks") or [] if c["type"] == "markdown_text"]


def tasks(args: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (c["title"], c["status"]) for c in args.get("chunks") or [] if c["type"] != "markdown_text"
    ]


async def test_a_stream_goes_through_the_sdk_helper_escaped_with_its_tasks(
    slack: FakeSlackApi,
) -> None:
    opened: list[tuple[str, int]] = []
    stream, client = await streamed(slack, opened)
    for event in (
        said("support_supervisor", actions=HANDOFF),
        delta("Your refund <!chan"),
        delta("nel> is on "),
        said("billing_agent", parts=(Part(function_call=CONSULT),)),
        said("billing_agent", parts=(Part(function_response=CONSULTED),)),
        delta("its way."),
    ):
        await stream.observe(event)
    reply = answer("Your refund <!channel> is on its way.", "e6")
    assert await stream.finish(reply, ["support_supervisor", "billing_agent"])

    calls = stream_calls(slack)
    methods = [m for m, _ in calls]
    assert methods[0] == "chat.startStream" and methods[-1] == "chat.stopStream"
    assert set(methods[1:-1]) == {"chat.appendStream"}
    assert slack.refused == []  # every call as strict Slack takes it
    # The first text started the message under its agent, the hand-off with it; it was
    # recorded before any other call.
    start = calls[0][1]
    assert tasks(start)[0] == ("support_supervisor → billing_agent", "complete")
    assert texts(start)[0].startswith(speaker_prefix("billing_agent"))
    assert start["username"] == "billing_agent"
    [helper] = client.helpers
    assert opened == [(helper.ts, 1)] and stream.ts == helper.ts
    assert [t for _, args in calls for t in tasks(args)] == [
        ("support_supervisor → billing_agent", "complete"),
        ("billing_agent consulted policy_checker", "in_progress"),
        ("billing_agent consulted policy_checker", "complete"),
    ]
    pieces = [piece for _, args in calls for piece in texts(args)]
    assert all("<!" not in piece for piece in pieces)
    shown = speaker_prefix("billing_agent") + "Your refund &lt;!channel&gt; is on its way."
    assert "".join(pieces) == shown
    stop = calls[-1][1]
    assert stop["ts"] == helper.ts and is_complete_reply(stop, "inv1")
    message = slack.messages["D1"][str(helper.ts)]
    assert message["text"] == shown
    assert not message["streaming"]


async def test_a_stored_reply_unlike_the_streamed_text_stops_the_stream_for_a_rewrite(
    slack: FakeSlackApi,
) -> None:
    opened: list[tuple[str, int]] = []
    stream, _ = await streamed(slack, opened)
    await stream.observe(delta("Let me check"))
    await stream.observe(said("billing_agent", parts=(Part(function_call=CONSULT),)))
    reply = answer("Your refund is on its way.", "e4")
    assert not await stream.finish(reply, [])

    methods = [m for m, _ in stream_calls(slack)]
    assert methods[0] == "chat.startStream" and methods[-1] == "chat.stopStream"
    assert set(methods[1:-1]) <= {"chat.appendStream"}
    assert slack.refused == []
    stop = stream_calls(slack)[-1][1]
    # Stopped with nothing more and not marked complete: the caller rewrites the message.
    assert texts(stop) == [] and not is_complete_reply(stop)
    assert tasks(stop) == [("billing_agent consulted policy_checker", "complete")]
    assert [ts for ts, _ in opened] == [stream.ts]


async def test_a_refused_stream_shows_nothing_and_leaves_the_reply_to_be_posted_whole(
    slack: FakeSlackApi,
) -> None:
    slack.stream_refusal = "not_allowed"
    opened: list[tuple[str, int]] = []
    stream, _ = await streamed(slack, opened)
    await stream.observe(said("support_supervisor", actions=HANDOFF))
    await stream.observe(delta("Your refund"))
    # A consultation after the first text starts the message at once: refused.
    await stream.observe(said("billing_agent", parts=(Part(function_call=CONSULT),)))
    reply = answer("Your refund is on its way.", "e3")
    assert not await stream.finish(reply, [])
    await stream.stop(failed=True)
    assert [m for m, _ in stream_calls(slack)] == ["chat.startStream"]
    assert stream.ts is None and opened == []
