"""Crash: the thread's one lead-channel message, when `support-bot digest --once` is
SIGKILLed after Slack took a change to it but before the process heard back.

- A "summary unavailable" notice is stored (a digest row of kind `unavailable`) before
  it is posted, so the next pass finds it in the lead channel by its metadata and posts
  nothing more: the notice shows once, and the thread is not summarised again.
- A thread that goes idle again updates its digest message in place (`chat.update`); a
  pass killed during the update is finished by the next one, still with one message.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from storage.database import Database
from tests.e2e.harness import BotHarness, dm, open_database
from tests.fakes.openai_server import FakeOpenAIServer, text
from tests.fakes.slack_api import Call, FakeSlackApi
from tests.reliability.support import EchoModel, echo_tree
from tests.reliability.test_digest_crash import (
    LEAD,
    ROOT,
    digest_env,
    digest_pass,
    finished,
    owner_dead,
)

RECORD = {
    "goal": "Refund the double charge on order 4411",
    "facts": [{"text": "Order 4411 was charged twice", "sources": ["e1"]}],
    "decisions": [],
    "commitments": [],
    "open_questions": [],
}


async def converse(slack: FakeSlackApi, tmp_path: Path, text_: str, ts: str) -> None:
    """One message in the DM thread rooted at ROOT, answered by the bot over HTTP."""
    db = await open_database(tmp_path)
    bot = await BotHarness.start(slack, agent=echo_tree(EchoModel()), db=db, summarizer=object())
    thread_ts = None if ts == ROOT else ROOT
    slack.add_message("D1", ts=ts, text=text_, user="U1", thread_ts=thread_ts)
    await bot.send_event(dm(text_, ts=ts, thread_ts=thread_ts))
    await bot.idle()
    await bot.stop()
    await db.close()


def lead_messages(slack: FakeSlackApi) -> list[dict[str, Any]]:
    return sorted(slack.messages.get(LEAD, {}).values(), key=lambda m: float(m["ts"]))


def killer(slack: FakeSlackApi, method: str, proc: list[Any]) -> None:
    def kill(call: Call) -> None:
        if call.args.get("channel") == LEAD:
            proc[0].send_signal(signal.SIGKILL)

    slack.before_answer(method, kill)


async def test_unavailable_notice_killed_after_posting_is_found_not_posted_twice(
    slack: FakeSlackApi, openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    await converse(slack, tmp_path, "my card was charged twice for order 4411", ROOT)
    # A goal stating a value no event holds: no repair touches the goal (an item stating
    # it would be dropped before validation).
    invalid = {**RECORD, "goal": "Refund the double charge on order B-9999"}
    openai.add(text(json.dumps(invalid)), text(json.dumps(invalid)))
    env, log = digest_env(slack, openai, tmp_path / "bot.db"), tmp_path / "digest.log"
    proc = [digest_pass(env, log)]
    killer(slack, "chat.postMessage", proc)
    assert await finished(proc[0]) == -signal.SIGKILL
    slack.before_answer("chat.postMessage", None)
    [notice] = lead_messages(slack)
    assert notice["text"].startswith("Summary unavailable")

    # The next pass finishes the stored notice: no new summary, no second notice.
    await owner_dead(env)
    second = digest_pass(env, log)
    assert await finished(second) == 0, log.read_text()[-2000:]
    assert [m["ts"] for m in lead_messages(slack)] == [notice["ts"]]
    openai.assert_complete()
    db = await Database.open(env["DATABASE_URL"])
    try:
        [row] = await db.digests.list_recent()
        assert row.kind == "unavailable" and row.slack_ts == notice["ts"]
        assert any("B-9999" in problem for problem in row.problems)
    finally:
        await db.close()
    third = digest_pass(env, log)
    assert await finished(third) == 0
    assert [m["ts"] for m in lead_messages(slack)] == [notice["ts"]]


async def test_thread_idle_again_updates_its_one_message_even_when_killed_mid_update(
    slack: FakeSlackApi, openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    await converse(slack, tmp_path, "my card was charged twice for order 4411", ROOT)
    env, log = digest_env(slack, openai, tmp_path / "bot.db"), tmp_path / "digest.log"
    openai.add(text(json.dumps(RECORD)))
    assert await finished(digest_pass(env, log)) == 0, log.read_text()[-2000:]
    [first] = lead_messages(slack)

    # The customer comes back; the thread goes idle again and is digested again.
    await converse(slack, tmp_path, "any news on order 4411?", slack.next_ts())
    openai.add(text(json.dumps(RECORD)))
    proc = [digest_pass(env, log)]
    killer(slack, "chat.update", proc)
    assert await finished(proc[0]) == -signal.SIGKILL
    slack.before_answer("chat.update", None)
    await owner_dead(env)
    resumed = digest_pass(env, log)
    assert await finished(resumed) == 0, log.read_text()[-2000:]

    [shown] = lead_messages(slack)
    assert shown["ts"] == first["ts"]
    assert shown["text"].startswith("Updated handoff digest")
    assert "Updated after 1 new message in the thread" in json.dumps(shown["blocks"])
    lead_posts = [c for c in slack.calls_to("chat.postMessage") if c["channel"] == LEAD]
    assert len(lead_posts) == 1
    db = await Database.open(env["DATABASE_URL"])
    try:
        newest, older = await db.digests.list_recent()
        assert newest.supersedes_digest_id == older.id
        assert shown["metadata"]["event_payload"]["digest_id"] == newest.id
        assert await db.digests.posted_pages(newest.id) == {1: first["ts"]}
    finally:
        await db.close()
