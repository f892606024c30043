"""Several bot processes on one real PostgreSQL, as whole flows over signed HTTP.

- A process SIGKILLed and restarted within seconds (as systemd or Kubernetes does) has
  every message it had accepted answered, once its heartbeat stops: no age threshold.
- Two processes sharing one thread answer its messages one at a time, in order, even
  when the first message is the slow one.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from tests.e2e.harness import SIGNING_SECRET, dm
from tests.fakes.openai_server import FakeOpenAIServer, Reply, text
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import (
    NOTICES,
    BotProcess,
    Sender,
    bot_messages,
    free_port,
    settled,
    wait_until,
)


def bot_env(slack: FakeSlackApi, openai: FakeOpenAIServer, database_url: str) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": slack.url,
        "DATABASE_URL": database_url,
        "MODEL": "openai/test",
        "MODEL_API_BASE": openai.base_url,
        "MODEL_API_KEY": "sk-test",
        "MODEL_TIMEOUT_SECONDS": "300",
        "PORT": str(free_port()),
        "HOST": "127.0.0.1",
        "HEARTBEAT_SECONDS": "0.5",
        "OWNER_DEAD_AFTER_SECONDS": "3",
        "LOG_LEVEL": "WARNING",
    }


def echo(slow: dict[str, float]) -> Any:
    """Answers with the user's words, after `slow[words]` seconds when they say `words`,
    else `slow["*"]` (default none)."""

    def answer(body: dict[str, Any]) -> Reply:
        user = [m for m in body["messages"] if m["role"] == "user"]
        said = str(user[-1]["content"]) if user else "?"
        delay = next((s for words, s in slow.items() if words in said), slow.get("*", 0.0))
        return text(f"Answer to: {said}").delayed(delay)

    return answer


async def test_restart_within_seconds_answers_every_accepted_message(
    slack: FakeSlackApi, openai: FakeOpenAIServer, postgres_url: str, tmp_path: Path
) -> None:
    slow = {"*": 120.0}
    openai.add(*[echo(slow)] * 200)
    env = bot_env(slack, openai, postgres_url)
    first = BotProcess(env, tmp_path / "bot.log")
    await first.start()
    sender = Sender(first.url)
    threads: dict[tuple[str, str], int] = {}
    try:
        for i in range(20):
            ts = slack.next_ts()
            # One DM each: top-level messages in one DM would be one conversation.
            channel, user = f"D{i}", f"U{i}"
            slack.add_message(channel, ts=ts, text=f"question {i}", user=user)
            event = dm(f"question {i}", ts=ts, channel=channel, user=user)
            assert await sender.event(event, event_id=f"Ev{i}") == 200
            threads[(channel, ts)] = 1
        await wait_until(lambda: len(openai.requests) >= 20, within=30, what="model calls")
        first.kill()
        slow["*"] = 0.0
        # Restarted at once: the predecessor's rows are young, but it no longer beats.
        restarted = BotProcess(env, tmp_path / "bot.log")
        await restarted.start()
        await wait_until(lambda: settled(slack, threads), within=30, what="every thread answered")
        assert restarted.stop() == 0
    finally:
        await sender.close()
    for channel, root in threads:
        (answer,) = bot_messages(slack, channel, root)
        assert answer["text"] in NOTICES


async def test_two_processes_answer_one_thread_in_order(
    slack: FakeSlackApi, openai: FakeOpenAIServer, postgres_url: str, tmp_path: Path
) -> None:
    # The thread's first message is slow; the later ones, sent to the other process
    # while it runs, are fast.
    openai.add(*[echo({"message 0": 2.0})] * 50)
    env = bot_env(slack, openai, postgres_url)
    bots = [BotProcess({**env, "PORT": str(free_port())}, tmp_path / f"bot{i}.log") for i in (0, 1)]
    await asyncio.gather(*(bot.start() for bot in bots))
    senders = [Sender(bot.url) for bot in bots]
    root = slack.next_ts()
    try:
        for i in range(4):
            ts = root if i == 0 else slack.next_ts()
            thread_ts = None if i == 0 else root
            slack.add_message("D1", ts=ts, text=f"message {i}", user="U1", thread_ts=thread_ts)
            event = dm(f"message {i}", ts=ts, thread_ts=thread_ts)
            assert await senders[i % 2].event(event, event_id=f"Ev{i}") == 200
        await wait_until(lambda: settled(slack, {("D1", root): 4}), within=60, what="four answers")
        await asyncio.sleep(0.5)
        for bot in bots:
            assert bot.stop() == 0
    finally:
        for sender in senders:
            await sender.close()
    answers = [m["text"] for m in bot_messages(slack, "D1", root)]
    assert [re.findall(r"message (\d)", a)[-1] for a in answers] == ["0", "1", "2", "3"], answers
