"""Crash: `support-bot digest --once` is SIGKILLed after Slack took one of the digest's
two messages but before the process heard back, so its ts was never recorded. The next
pass finds that message by its metadata in the lead channel (the first page in the
channel's history, the second in the first one's thread) and posts only what was
missing: the lead channel shows the digest once."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from storage.database import Database
from tests.e2e.harness import SIGNING_SECRET, BotHarness, dm, open_database
from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.fakes.slack_api import Call, FakeSlackApi
from tests.reliability.support import REPO, EchoModel, echo_tree

ROOT = "1700000800.000100"
LEAD = "CLEAD"


def long_record() -> dict[str, Any]:
    """A valid record that takes two Slack messages (over 50 blocks of 3,000 characters)."""
    rng = random.Random(23)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "da"]
    vocabulary = ["".join(rng.choice(syllables) for _ in range(3)) for _ in range(3000)]
    facts = [
        {"text": " ".join(rng.choice(vocabulary) for _ in range(380)) + " about the card",
         "sources": ["e1"]}
        for _ in range(56)
    ]  # fmt: skip
    return {
        "goal": "Refund the double charge on order 4411",
        "facts": [{"text": "Order 4411 was charged twice", "sources": ["e1"]}, *facts],
        "decisions": [],
        "commitments": [],
        "open_questions": [],
    }


def digest_env(slack: FakeSlackApi, openai: FakeOpenAIServer, db_file: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": slack.url,
        "SUPPORT_LEAD_CHANNEL": LEAD,
        "DATABASE_URL": f"sqlite+aiosqlite:///{db_file}",
        "MODEL": "openai/test",
        "MODEL_API_BASE": openai.base_url,
        "MODEL_API_KEY": "sk-test",
        "IDLE_AFTER_SECONDS": "0",
        # A pass beats while it runs; a killed one's leases are free once it stops
        # beating this long (the tests wait that long after a kill: `owner_dead`).
        "HEARTBEAT_SECONDS": "0.5",
        "OWNER_DEAD_AFTER_SECONDS": "2",
        "LOG_LEVEL": "WARNING",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def digest_pass(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "digest", "--once"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def finished(proc: subprocess.Popen[bytes]) -> int:
    return await asyncio.to_thread(proc.wait, 60)


async def owner_dead(env: dict[str, str]) -> None:
    """Wait until a killed pass counts as dead: its leases are free only once it has
    not beaten for OWNER_DEAD_AFTER_SECONDS (the wait is that configured timeout; on a
    quiet machine the next pass starts sooner and would rightly leave them alone)."""
    await asyncio.sleep(float(env["OWNER_DEAD_AFTER_SECONDS"]) + 0.5)


@pytest.mark.parametrize("killed_at_page", [1, 2])
async def test_digest_killed_after_posting_is_resumed_not_posted_twice(
    slack: FakeSlackApi, openai: FakeOpenAIServer, tmp_path: Path, killed_at_page: int
) -> None:
    # The thread: a conversation with the bot over real HTTP, on the SQLite file.
    db = await open_database(tmp_path)
    bot = await BotHarness.start(slack, agent=echo_tree(EchoModel()), db=db, summarizer=object())
    slack.add_message("D1", ts=ROOT, text="my card was charged twice for order 4411", user="U1")
    await bot.send_event(dm("my card was charged twice for order 4411", ts=ROOT))
    await bot.idle()
    await bot.stop()
    await db.close()

    openai.add(text(json.dumps(long_record())))
    env, log = digest_env(slack, openai, tmp_path / "bot.db"), tmp_path / "digest.log"
    first = digest_pass(env, log)

    def kill(call: Call) -> None:
        if call.args.get("channel") == LEAD and len(slack.messages[LEAD]) == killed_at_page:
            first.send_signal(signal.SIGKILL)

    slack.before_answer("chat.postMessage", kill)
    assert await finished(first) == -signal.SIGKILL
    slack.before_answer("chat.postMessage", None)
    posted = sorted(slack.messages[LEAD].values(), key=lambda m: float(m["ts"]))
    assert [m["metadata"]["event_payload"]["page"] for m in posted] == [1, 2][:killed_at_page]
    page_one = posted[0]

    await owner_dead(env)
    second = digest_pass(env, log)
    assert await finished(second) == 0, log.read_text()[-2000:]
    lead = sorted(slack.messages[LEAD].values(), key=lambda m: float(m["ts"]))
    # Page one once, and page two in its thread: the digest shows once.
    assert [m["metadata"]["event_payload"]["page"] for m in lead] == [1, 2]
    assert lead[1]["thread_ts"] == page_one["ts"]
    # It was found by reading the lead channel with metadata: the history for a lost
    # first page, the first page's thread for a lost second one.
    read = "conversations.history" if killed_at_page == 1 else "conversations.replies"
    reads = [c for c in slack.calls_to(read) if c["channel"] == LEAD]
    assert reads and all(c["include_all_metadata"] in ("1", "true") for c in reads)
    db = await Database.open(env["DATABASE_URL"])
    try:
        [digest] = await db.digests.list_recent()
        assert await db.digests.posted_pages(digest.id) == {1: page_one["ts"], 2: lead[1]["ts"]}
    finally:
        await db.close()
    # A third pass has nothing left to do.
    third = digest_pass(env, log)
    assert await finished(third) == 0
    assert len(slack.messages[LEAD]) == 2
