"""End to end: a DM's top-level messages are one conversation (issue 17 item 4).

Twelve top-level DMs give one thread, one session and one digest, whose links point at
the messages where they are; the replies sit in the conversation's thread and show in
the DM too. A conversation quiet for `DM_CONVERSATION_IDLE_MINUTES`, or ended with
`/new`, is followed by a new one; a reply in the Slack thread keeps it going, and so does
a reply under a top-level message that was folded into the conversation.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import sqlalchemy as sa

from agents.models.scripted import ScriptedModel
from agents.summary import SummaryService
from bot.digests.job import DigestJob
from bot.slack.dm_conversation import NEW_ONLY_IN_DM, NEW_STARTED
from storage.schema import threads
from tests.e2e.conftest import StartBot
from tests.e2e.harness import BotHarness, dm
from tests.e2e.replies import context_text, shown
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

LINK = "https://fake.slack.com/archives/D1/p"


def _ts(n: int) -> str:
    return f"1700000700.{n + 100:06d}"


async def _thread_roots(bot: BotHarness) -> list[str]:
    async with bot.services.db.engine.connect() as conn:
        rows = await conn.execute(sa.select(threads.c.thread_ts).order_by(threads.c.thread_ts))
        return [r[0] for r in rows]


def _summary(goal: str, *facts: tuple[str, str]) -> SummaryService:
    """A summary agent that answers once with `goal` and `facts` (text, cited event)."""
    record = {
        "goal": goal,
        "facts": [{"text": text, "sources": [source]} for text, source in facts],
        "decisions": [],
        "commitments": [],
        "open_questions": [],
    }
    return SummaryService(ScriptedModel([json.dumps(record)]))


async def _say(bot: BotHarness, slack: FakeSlackApi, text: str, ts: str, **kw: Any) -> None:
    slack.add_message("D1", ts=ts, text=text, user="U1", thread_ts=kw.get("thread_ts"))
    await bot.send_event(dm(text, ts=ts, **kw))
    await bot.idle()


async def test_twelve_top_level_dms_are_one_conversation_with_one_digest(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel([f"Answer {n}" for n in range(12)])
    summaries = _summary(
        "Sort out orders 0 and 1",
        ("The user asked about order 0", "e1"),
        ("The user asked about order 1", "e3"),
    )
    bot = await start_bot(support_tree(model), summarizer=summaries)
    for n in range(12):
        await _say(bot, slack, f"about order {n}", _ts(n))

    root = _ts(0)
    assert await _thread_roots(bot) == [root]
    replies = [m for m in slack.thread("D1", root) if m.get("bot_id")]
    assert [shown(m) for m in replies] == [f"Answer {n}" for n in range(12)]
    assert all("support_supervisor" in context_text(m) for m in replies)
    # Each answer, complete at once, is posted whole into the conversation's thread, and
    # shown at the bottom of the DM too, where each question was written.
    assert slack.calls_to("chat.startStream") == []
    posts = [c for c in slack.calls_to("chat.postMessage") if c["channel"] == "D1"]
    assert len(posts) == 12 and {c["thread_ts"] for c in posts} == {root}
    assert [m.get("subtype") for m in replies] == ["thread_broadcast"] * 12
    # The model saw the whole conversation on the last turn.
    assert "about order 0" in json.dumps([str(c) for c in model.requests[-1].contents])

    job = DigestJob(
        db=bot.services.db, summarizer=summaries, client=bot.services.client,
        lead_channel="CLEAD", idle_after=0, owner=bot.services.owner,
    )  # fmt: skip
    [digest] = await job.run_once()
    assert digest.outcome == "posted", digest.problems
    [post] = [c for c in slack.calls_to("chat.postMessage") if c["channel"] == "CLEAD"]
    links = re.findall(r"<(https://[^|>]+)\|", json.dumps(post["blocks"]))
    # The root links as the thread; the second message, posted at the bottom of the DM,
    # links to itself there (not into the thread, where it is not).
    assert f"{LINK}{root.replace('.', '')}" in links
    assert f"{LINK}{_ts(1).replace('.', '')}" in links
    assert not [link for link in links if "thread_ts" in link]


async def test_an_idle_conversation_or_new_starts_another_and_thread_replies_keep_it(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel([f"Answer {n}" for n in range(6)])
    bot = await start_bot(support_tree(model), dm_conversation_idle_minutes=1 / 60)
    await _say(bot, slack, "first", _ts(0))
    # Replies in the Slack thread keep the conversation active past the idle limit.
    for n in (1, 2):
        await asyncio.sleep(0.6)
        await _say(bot, slack, f"in thread {n}", _ts(n), thread_ts=_ts(0))
    await asyncio.sleep(0.6)
    await _say(bot, slack, "still the same conversation", _ts(3))
    assert await _thread_roots(bot) == [_ts(0)]

    await asyncio.sleep(1.2)
    await _say(bot, slack, "after a quiet spell", _ts(4))
    assert await _thread_roots(bot) == [_ts(0), _ts(4)]

    resp = await bot.send_command("/new", "", channel="D1")
    assert resp.status == 200 and NEW_STARTED in await resp.text()
    await _say(bot, slack, "a fresh start", _ts(5))
    assert await _thread_roots(bot) == [_ts(0), _ts(4), _ts(5)]
    assert [shown(m) for m in slack.thread("D1", _ts(0)) if m.get("bot_id")] == [
        f"Answer {n}" for n in range(4)
    ]


async def test_new_outside_a_dm_is_refused_and_changes_nothing(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["one", "two"])))
    await _say(bot, slack, "first", _ts(0))
    resp = await bot.send_command("/new", "", channel="C1")
    assert resp.status == 200 and NEW_ONLY_IN_DM in await resp.text()
    await _say(bot, slack, "second", _ts(1))
    assert await _thread_roots(bot) == [_ts(0)]


async def test_a_reply_under_a_continued_top_level_message_joins_its_conversation(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel([f"Answer {n}" for n in range(4)])
    summaries = _summary(
        "Sort out order 7",
        ("The user asked about order 7", "e1"),
        ("The user said order 7 came damaged", "e5"),
    )
    bot = await start_bot(support_tree(model), summarizer=summaries)
    root, folded, under, again = _ts(0), _ts(1), _ts(2), _ts(3)
    await _say(bot, slack, "about order 7", root)
    await _say(bot, slack, "it is still not here", folded)
    # The user answers in the Slack thread under the folded (second) top-level message.
    await _say(bot, slack, "order 7 came damaged", under, thread_ts=folded)
    await _say(bot, slack, "and the box was open", again, thread_ts=folded)

    # One conversation: one thread, one session, which the model saw whole.
    assert await _thread_roots(bot) == [root]
    said = json.dumps([str(c) for c in model.requests[-1].contents])
    assert "about order 7" in said and "order 7 came damaged" in said
    # Answered in the conversation's thread, like a top-level message.
    replies = [m for m in slack.thread("D1", root) if m.get("bot_id")]
    assert [shown(m) for m in replies] == [f"Answer {n}" for n in range(4)]
    assert not [m for m in slack.thread("D1", folded) if m.get("bot_id")]

    job = DigestJob(
        db=bot.services.db, summarizer=summaries, client=bot.services.client,
        lead_channel="CLEAD", idle_after=0, owner=bot.services.owner,
    )  # fmt: skip
    [digest] = await job.run_once()
    assert digest.outcome == "posted", digest.problems
    [post] = [c for c in slack.calls_to("chat.postMessage") if c["channel"] == "CLEAD"]
    links = re.findall(r"<(https://[^|>]+)\|", json.dumps(post["blocks"]))
    # The reply links to itself in the Slack thread it was written in.
    assert f"{LINK}{under.replace('.', '')}?thread_ts={folded}&cid=D1" in links
