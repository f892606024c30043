"""End to end: feedback bound to its reply and its person (issue 41 item 6).

A button keeps naming its reply after a hand-off re-maps the thread to a new session;
`support_bot_feedback_total` counts people (a change of mind moves the mark); the
digest says whether the customer (the thread's owner) or the staff marked; clicks go
through the user rate.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from agents.models.scripted import ScriptedModel, transfer
from agents.summary import SummaryService
from storage.schema import feedback
from storage.threads import ThreadKey
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, BotHarness, channel_message
from tests.e2e.replies import answers, wait_answers
from tests.e2e.test_feedback import click, feedback_block, metrics
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

ROOT = "1700001300.000100"
LINK = f"https://fake.slack.com/archives/C1/p{ROOT.replace('.', '')}"
RECORD = {
    "goal": "Get a double charge refunded",
    "facts": [{"text": "Charged twice", "sources": ["e1"]}],
    "decisions": [],
    "commitments": [],
    "open_questions": [],
}


async def _say(bot: BotHarness, slack: FakeSlackApi, text: str, ts: str) -> dict[str, Any]:
    """U1 writes in the thread; the bot's reply there, once finished."""
    before = len(answers(slack))
    thread_ts = None if ts == ROOT else ROOT
    await bot.send_event(channel_message(text, ts=ts, thread_ts=thread_ts, mention=True))
    await wait_answers(slack, before + 1)
    await bot.idle()
    return answers(slack)[-1]


async def _rows(bot: BotHarness) -> list[tuple[str, str, str, str, str]]:
    async with bot.services.db.engine.connect() as conn:
        query = sa.select(
            feedback.c.session_id,
            feedback.c.event_id,
            feedback.c.user_id,
            feedback.c.value,
            feedback.c.marker,
        ).order_by(feedback.c.user_id)
        return [tuple(row) for row in await conn.execute(query)]


async def test_feedback_button_keeps_its_reply_across_a_handoff_and_counts_people(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel(["First answer.", "Second answer.", transfer("billing_agent"), "B1"])
    summarizer = SummaryService(
        ScriptedModel(
            [json.dumps(RECORD)] * 3,
            partial="one record per summary the test asks for, however many it is",
        )
    )
    bot = await start_bot(support_tree(model), summarizer=summarizer, support_lead_channel="CLEAD")
    await _say(bot, slack, "charged twice", ROOT)
    old = await _say(bot, slack, "still charged twice", "1700001300.000300")
    key = ThreadKey(team_id=TEAM, channel_id="C1", thread_ts=ROOT)
    source = (await bot.services.db.threads.get(key)).session_id
    # U2 hands the thread to the supervisor again; the new session answers with a transfer.
    await bot.send_command("/handoff", f"{LINK} support_supervisor", user="U2")
    await bot.idle()
    await _say(bot, slack, "any news?", "1700001300.000500")
    assert (await bot.services.db.threads.get(key)).session_id != source

    # Clicks on the old reply's button, after the re-map: the customer (U1, who opened
    # the thread) and U2, who changes their mind.
    where = {"channel": "C1", "thread_ts": ROOT, "message_ts": old["ts"]}
    block = feedback_block(old)
    for value, user in (("negative", "U1"), ("negative", "U2"), ("positive", "U2")):
        assert (await bot.send_payload(click(block, value, user=user, **where))).status == 200
        await bot.idle()
    event_id = block["block_id"].removeprefix("feedback:")
    assert await _rows(bot) == [
        (source, event_id, "U1", "negative", "customer"),
        (source, event_id, "U2", "positive", "staff"),
    ]
    got = await metrics(bot)
    assert got['support_bot_feedback_total{agent="support_supervisor",value="negative"}'] == 1
    assert got['support_bot_feedback_total{agent="support_supervisor",value="positive"}'] == 1


async def test_feedback_clicks_go_through_the_user_rate(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(
        support_tree(ScriptedModel(["Hello!"])), user_rate_burst=2, user_rate_per_minute=0.01
    )
    reply = await _say(bot, slack, "hi", ROOT)
    where = {"channel": "C1", "thread_ts": ROOT, "message_ts": reply["ts"]}
    block = feedback_block(reply)
    for value in ("negative", "positive", "negative"):
        await bot.send_payload(click(block, value, user="U2", **where))
        await bot.idle()
    # Two clicks within the rate; the third is dropped, so the mark stays positive.
    assert [row[3] for row in await _rows(bot)] == ["positive"]


async def test_feedback_digest_says_whether_the_customer_or_the_staff_marked(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    summarizer = SummaryService(
        ScriptedModel(
            [json.dumps(RECORD)],
            partial="one record per summary the test asks for, however many it is",
        )
    )
    bot = await start_bot(support_tree(ScriptedModel(["Hello!"])), summarizer=summarizer)
    reply = await _say(bot, slack, "hi", ROOT)
    where = {"channel": "C1", "thread_ts": ROOT, "message_ts": reply["ts"]}
    block = feedback_block(reply)
    for value, user in (("negative", "U1"), ("positive", "U2")):
        await bot.send_payload(click(block, value, user=user, **where))
        await bot.idle()
    [digest] = await bot.digest_job().run_once()
    assert digest.outcome == "posted"
    posted = json.dumps([c for c in slack.calls_to("chat.postMessage") if c["channel"] == "CLEAD"])
    assert "Feedback: customer marked 1 reply unhelpful; staff marked 1 reply helpful" in posted


async def test_feedback_before_a_handoff_shows_in_the_digest_the_thread_posts_after_it(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    """The customer marks a reply unhelpful, then the thread is handed off: its next
    digest (the thread's one lead-channel message, now of the new session) says so."""
    summarizer = SummaryService(
        ScriptedModel(
            [json.dumps(RECORD)] * 3,
            partial="one record per summary the test asks for, however many it is",
        )
    )
    model = ScriptedModel(["First answer.", "Second answer."])
    bot = await start_bot(support_tree(model), summarizer=summarizer, support_lead_channel="CLEAD")
    first = await _say(bot, slack, "charged twice", ROOT)
    where = {"channel": "C1", "thread_ts": ROOT, "message_ts": first["ts"]}
    await bot.send_payload(click(feedback_block(first), "negative", user="U1", **where))
    await bot.idle()
    key = ThreadKey(team_id=TEAM, channel_id="C1", thread_ts=ROOT)
    source = (await bot.services.db.threads.get(key)).session_id
    await bot.send_command("/handoff", f"{LINK} support_supervisor", user="U2")
    await bot.idle()
    await _say(bot, slack, "any news?", "1700001300.000500")
    assert (await bot.services.db.threads.get(key)).session_id != source
    assert [row[:1] + row[2:] for row in await _rows(bot)] == [
        (source, "U1", "negative", "customer")
    ]

    [digest] = await bot.digest_job().run_once()
    assert digest.outcome == "posted"
    [lead] = [c for c in slack.calls_to("chat.postMessage") if c["channel"] == "CLEAD"]
    assert "Feedback: customer marked 1 reply unhelpful" in json.dumps(lead)
