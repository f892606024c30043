"""Several bot processes on one real PostgreSQL, as whole flows over signed HTTP.

- A process SIGKILLed and restarted within seconds (as systemd or Kubernetes does) has
  every message it had accepted answered, once its heartbeat stops: no age threshold.
- Two processes sharing one thread answer its messages one at a time, in order, even
  when the first message is the slow one.
- A thread that goes idle, is digested, gets more messages through the other process and
  goes idle again keeps one message in the lead channel: the second digest, by whichever
  of two racing digest processes claims it, updates the first in place.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

from storage.database import Database
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
from tests.reliability.test_digest_crash import LEAD, digest_pass, finished


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


async def _digest_passes(env: dict[str, str], log: Path, count: int) -> None:
    """`count` `support-bot digest --once` processes at once, each to completion."""
    procs = [digest_pass({**os.environ, **env}, log) for _ in range(count)]
    codes = await asyncio.gather(*(finished(proc) for proc in procs))
    assert codes == [0] * count, f"digest passes failed, see {log}"


async def test_a_thread_idle_twice_keeps_one_lead_message_across_processes(
    slack: FakeSlackApi, openai: FakeOpenAIServer, postgres_url: str, tmp_path: Path
) -> None:
    # Nobody is killed here: a loaded machine's late heartbeat must not look like a death.
    env = {**bot_env(slack, openai, postgres_url), "OWNER_DEAD_AFTER_SECONDS": "60"}
    bots = [BotProcess({**env, "PORT": str(free_port())}, tmp_path / f"bot{i}.log") for i in (0, 1)]
    await asyncio.gather(*(bot.start() for bot in bots))
    senders = [Sender(bot.url) for bot in bots]
    digests = {**env, "SUPPORT_LEAD_CHANNEL": LEAD, "IDLE_AFTER_SECONDS": "0"}
    log = tmp_path / "digest.log"
    record = {
        "goal": "Answer the user's messages",
        "facts": [{"text": "The user wrote message 0", "sources": ["e1"]}],
        "decisions": [],
        "commitments": [],
        "open_questions": [],
    }
    root = slack.next_ts()
    try:
        for i in range(2):
            ts = root if i == 0 else slack.next_ts()
            thread_ts = None if i == 0 else root
            slack.add_message("D1", ts=ts, text=f"message {i}", user="U1", thread_ts=thread_ts)
            openai.add(echo({}))
            event = dm(f"message {i}", ts=ts, thread_ts=thread_ts)
            assert await senders[i].event(event, event_id=f"Ev{i}") == 200
            await wait_until(
                lambda i=i: settled(slack, {("D1", root): i + 1}), within=60, what="the answer"
            )
            # Idle: digested by one of two digest processes racing for the thread.
            openai.add(text(json.dumps(record)))
            await _digest_passes(digests, log, 2)
        for bot in bots:
            assert bot.stop() == 0
    finally:
        for sender in senders:
            await sender.close()
    [shown] = slack.messages[LEAD].values()
    assert [c["channel"] for c in slack.calls_to("chat.postMessage")].count(LEAD) == 1
    assert [c["ts"] for c in slack.calls_to("chat.update") if c["channel"] == LEAD] == [shown["ts"]]
    assert "Updated after 1 new message in the thread" in json.dumps(shown["blocks"])
    db = await Database.open(postgres_url)
    try:
        newest, first = await db.digests.list_recent()
        assert newest.supersedes_digest_id == first.id and newest.slack_ts == first.slack_ts
        assert shown["metadata"]["event_payload"]["digest_id"] == newest.id
    finally:
        await db.close()
