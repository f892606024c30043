"""Crash: SIGKILL the bot process with about 100 invocations in flight, then restart it.

Every user message is stored, every message gets exactly one answer in its thread (its
reply, or "... a person from the support team will follow up"), no "thinking"
placeholder is left behind, and the SQLite file passes `PRAGMA integrity_check`.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from tests.e2e.harness import SIGNING_SECRET, dm
from tests.e2e.replies import answer_of, context_text
from tests.fakes.openai_server import FakeOpenAIServer, Reply, text
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import (
    NOTICES,
    BotProcess,
    Sender,
    bot_messages,
    free_port,
    integrity,
    settled,
    wait_until,
)

ROOTS = 110
FOLLOW_UPS = 20
SLOW_SECONDS = 90.0


def scripted_model(phase: dict[str, bool]) -> Any:
    """Answers each request with the user's own words; slow (hangs) while `phase["slow"]`,
    except every tenth request, so some invocations finish before the kill."""
    counter = iter(range(1_000_000))

    def answer(body: dict[str, Any]) -> Reply:
        n = next(counter)
        user = [m for m in body["messages"] if m["role"] == "user"]
        said = str(user[-1]["content"]) if user else "?"
        reply = text(f"Answer to: {said}")
        if phase["slow"] and n % 10 != 0:
            return reply.delayed(SLOW_SECONDS)
        return reply

    return answer


def bot_env(slack: FakeSlackApi, openai: FakeOpenAIServer, db_file: Path) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": slack.url,
        "DATABASE_URL": f"sqlite+aiosqlite:///{db_file}",
        "MODEL": "openai/test",
        "MODEL_API_BASE": openai.base_url,
        "MODEL_API_KEY": "sk-test",
        "MODEL_TIMEOUT_SECONDS": "300",
        "PORT": str(free_port()),
        "HOST": "127.0.0.1",
        "MAX_CONCURRENT_INVOCATIONS": "200",
        # Load from one user, not the per-user rate, is under test here.
        "USER_RATE_BURST": "100000",
        "LOG_LEVEL": "WARNING",
    }


async def test_crash_sigkill_with_invocations_in_flight_loses_nothing(
    slack: FakeSlackApi, openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    phase = {"slow": True}
    openai.add(*[scripted_model(phase)] * 2_000)
    db_file = tmp_path / "bot.db"
    env = bot_env(slack, openai, db_file)
    bot = BotProcess(env, tmp_path / "bot.log")
    await bot.start()
    sender = Sender(bot.url)
    threads: dict[tuple[str, str], int] = {}
    sent: list[str] = []
    try:
        roots = []
        for i in range(ROOTS):
            # One DM each: top-level messages in one DM would be one conversation.
            ts, channel, user = slack.next_ts(), f"D{i}", f"U{i}"
            slack.add_message(channel, ts=ts, text=f"question {i}", user=user)
            event = dm(f"question {i}", ts=ts, channel=channel, user=user)
            assert await sender.event(event, event_id=f"EvR{i}") == 200
            roots.append(ts)
            threads[(channel, ts)] = 1
            sent.append(ts)
        for i in range(FOLLOW_UPS):
            root, channel, user = roots[i * 5], f"D{i * 5}", f"U{i * 5}"
            ts = slack.next_ts()
            slack.add_message(channel, ts=ts, text=f"follow-up {i}", user=user, thread_ts=root)
            event = dm(f"follow-up {i}", ts=ts, thread_ts=root, channel=channel, user=user)
            assert await sender.event(event, event_id=f"EvF{i}") == 200
            threads[(channel, root)] += 1
            sent.append(ts)
        # Every root invocation has reached the model; the fast tenth have answered.
        await wait_until(lambda: len(openai.requests) >= ROOTS, within=40, what="model calls")
        await asyncio.sleep(0.5)
        bot.kill()
        in_flight = sum(1 for key in threads if not settled(slack, {key: 1}))
        assert in_flight >= 90, f"only {in_flight} threads were in flight at the kill"

        phase["slow"] = False
        restarted = BotProcess({**env}, tmp_path / "bot.log")
        await restarted.start()
        await wait_until(lambda: settled(slack, threads), within=40, what="every thread answered")
        assert restarted.stop() == 0
    finally:
        await sender.close()

    notices = replies = 0
    for (channel, root), expected in threads.items():
        mine = bot_messages(slack, channel, root)
        assert len(mine) == expected, (root, [m["text"] for m in mine])
        for message in mine:
            if message["text"] in NOTICES:
                notices += 1
            else:
                # A streamed reply shows its text and names its agent in the context line;
                # one rewritten by chat.update names it in its notification text too.
                assert answer_of(message).startswith("Answer to: ")
                assert "support_supervisor" in context_text(message)
                replies += 1
    print(f"crash: {in_flight} threads in flight at SIGKILL; {notices} notices, {replies} replies")
    assert notices >= 90 and replies >= FOLLOW_UPS, (notices, replies)
    assert integrity(db_file) == "ok"
    with sqlite3.connect(db_file) as conn:
        query = "SELECT json_extract(custom_metadata, '$.slack_ts') FROM events WHERE author=?"
        stored = {r[0] for r in conn.execute(query, ("user",))}
        flagged = conn.execute("SELECT count(*) FROM threads WHERE needs_attention").fetchone()
        left = conn.execute("SELECT count(*) FROM inflight").fetchone()
    assert stored >= set(sent)
    assert flagged[0] >= 1 and left[0] == 0
