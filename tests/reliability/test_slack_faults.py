"""Slack faults: the methods a reply is posted with answer 429 (with Retry-After) or 500
for a while: `chat.postMessage` for a reply complete at once, the streaming methods
(chat.startStream, chat.stopStream) for a streamed one. Every reply arrives once the
fault clears, exactly once, and no stream is left open."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.slack.streaming import speaker_prefix
from tests.e2e.harness import BotHarness, dm, open_database
from tests.e2e.replies import context_text, finished, shown
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import EchoModel, StreamingEchoModel, bot_messages, echo_tree

THREADS = 12
# How the reply is posted -> the two methods that fail.
WAYS = {
    "whole": ("chat.postMessage", "chat.postMessage"),
    "streamed": ("chat.startStream", "chat.stopStream"),
}


async def run_with_faults(
    slack: FakeSlackApi, tmp_path: Path, faults: object, way: str
) -> list[str]:
    db = await open_database(tmp_path)
    model = StreamingEchoModel() if way == "streamed" else EchoModel()
    bot = await BotHarness.start(slack, agent=echo_tree(model), db=db, summarizer=object())
    roots = [slack.next_ts() for _ in range(THREADS)]
    try:
        assert callable(faults)
        clear = faults()
        # One DM each: top-level messages in one DM would be one conversation.
        sends = [
            bot.send_event(dm(f"q{i}", ts=ts, channel=f"D{i}", user=f"U{i}"))
            for i, ts in enumerate(roots)
        ]
        assert {r.status for r in await asyncio.gather(*sends)} == {200}
        if clear is not None:
            await clear
        await bot.idle(90)
        assert await db.inflight.count() == 0
    finally:
        await bot.stop()
        await db.close()
    return roots


def assert_one_reply_each(slack: FakeSlackApi, roots: list[str]) -> None:
    for i, root in enumerate(roots):
        mine = bot_messages(slack, f"D{i}", root)
        # A streamed reply opens with its agent's name (`speaker_prefix`).
        words = [shown(m).removeprefix(speaker_prefix("support_supervisor")) for m in mine]
        assert words == [f"Answer to: q{i}"], mine
        assert all(finished(m) for m in mine)
        assert "support_supervisor" in context_text(mine[0])


@pytest.mark.parametrize("way", WAYS)
async def test_slack_faults_rate_limits_delay_but_never_lose_replies(
    slack: FakeSlackApi, tmp_path: Path, way: str
) -> None:
    first, last = WAYS[way]

    def faults() -> None:
        if first == last:
            slack.fail(first, status=429, times=50, retry_after=1)
        else:
            slack.fail(first, status=429, times=30, retry_after=1)
            slack.fail(last, status=429, times=20, retry_after=1)

    roots = await run_with_faults(slack, tmp_path, faults, way)
    assert_one_reply_each(slack, roots)
    statuses = [a.status for a in slack.attempts]
    assert statuses.count(429) == 50


@pytest.mark.parametrize("way", WAYS)
async def test_slack_faults_server_errors_for_seconds_then_every_reply_arrives(
    slack: FakeSlackApi, tmp_path: Path, way: str
) -> None:
    first, last = WAYS[way]

    async def clear_after(seconds: float) -> None:
        await asyncio.sleep(seconds)
        slack.fail(first, times=0)
        slack.fail(last, times=0)

    def faults() -> object:
        # An outage of unknown length: every write fails until the test clears it.
        slack.fail(first, status=500, times=10**6)
        if last != first:
            slack.fail(last, status=503, times=10**6)
        return clear_after(4.0)

    roots = await run_with_faults(slack, tmp_path, faults, way)
    assert_one_reply_each(slack, roots)
    failed = [a for a in slack.attempts if a.status >= 500]
    answered = [c for c in slack.calls if c.method in (first, last)]
    assert failed and min(c.at for c in answered) > max(a.at for a in failed)
