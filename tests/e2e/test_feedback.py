"""End to end: feedback buttons on AI replies, clicks stored once, counted, digested,
reported by `support-bot stats` and deleted by `forget --user`."""

from __future__ import annotations

import itertools
from typing import Any

from agents.models.scripted import ScriptedModel, json_text, transfer
from agents.summary.service import SummaryService
from bot.digests.job import DigestJob
from bot.ops.stats import stats_rows
from bot.slack.render.blocks import FEEDBACK_ACTION
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, BotHarness, dm
from tests.e2e.replies import answers, wait_answers
from tests.e2e.test_metrics import samples
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

_triggers = itertools.count(1)
RECORD = {
    "goal": "Get a double charge refunded",
    "facts": [{"text": "Charged twice", "sources": ["e1"]}],
    "decisions": [],
    "commitments": [],
    "open_questions": [],
}


def feedback_block(update: dict[str, Any]) -> dict[str, Any]:
    [block] = [b for b in update["blocks"] if b["type"] == "context_actions"]
    return block


def click(
    block: dict[str, Any],
    value: str,
    *,
    channel: str,
    thread_ts: str,
    message_ts: str,
    user: str = "U1",
    trigger: str | None = None,
) -> dict[str, Any]:
    """The `block_actions` payload Slack sends for a click on a feedback button."""
    [element] = block["elements"]
    return {
        "type": "block_actions",
        "user": {"id": user, "team_id": TEAM},
        "api_app_id": "A1",
        "token": "legacy",
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel,
            "is_ephemeral": False,
            "thread_ts": thread_ts,
        },
        "trigger_id": trigger or f"fb{next(_triggers)}",
        "team": {"id": TEAM},
        "channel": {"id": channel},
        "message": {"type": "message", "ts": message_ts, "thread_ts": thread_ts, "text": "x"},
        "actions": [
            {
                "type": element["type"],
                "action_id": element["action_id"],
                "block_id": block["block_id"],
                "value": element[f"{value}_button"]["value"],
                "action_ts": "1700001000.000200",
            }
        ],
    }


async def answered(
    bot: BotHarness, slack: FakeSlackApi, text: str, root: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """Send `text` as a new DM and wait for its reply (streamed, or posted whole): the
    reply's feedback block, and where a click on it comes from (channel, thread,
    message)."""
    before = len(answers(slack))
    await bot.send_event(dm(text, ts=root))
    await wait_answers(slack, before + 1)
    await bot.idle()
    [reply] = [m for m in answers(slack) if m.get("thread_ts") == root]
    where = {"channel": "D1", "thread_ts": root, "message_ts": reply["ts"]}
    return feedback_block(reply), where


async def metrics(bot: BotHarness) -> dict[str, float]:
    assert bot.http is not None
    async with bot.http.get(f"{bot.url}/metrics") as response:
        return samples(await response.text())


async def test_feedback_click_is_stored_and_counted_once_even_when_delivered_twice(
    slack: FakeSlackApi, start_bot: StartBot, database: Any
) -> None:
    model = ScriptedModel([transfer("billing_agent"), "Your refund is on its way."])
    summarizer = SummaryService(ScriptedModel([json_text(RECORD)]))
    bot = await start_bot(support_tree(model), summarizer=summarizer)
    root = "1700001000.000100"
    block, where = await answered(bot, slack, "I was charged twice", root)
    [element] = block["elements"]
    assert element["type"] == "feedback_buttons" and element["action_id"] == FEEDBACK_ACTION

    unhelpful = click(block, "negative", **where)
    assert (await bot.send_payload(unhelpful)).status == 200
    # Slack's redelivery of the same request, and a copy with its own trigger (as a
    # second process would get it): neither is counted again.
    assert (await bot.send_payload(unhelpful)).status == 200
    assert (await bot.send_payload({**unhelpful, "trigger_id": "fb-copy"})).status == 200
    await bot.idle()

    got = await metrics(bot)
    assert got['support_bot_feedback_total{agent="billing_agent",value="negative"}'] == 1
    # The redelivery is dropped by its trigger id, the copy by the stored row.
    assert got['support_bot_duplicate_deliveries_total{layer="request"}'] == 1
    assert got['support_bot_duplicate_deliveries_total{layer="feedback"}'] == 1
    thread = (await database.threads.list_threads())[0]
    counted = await database.feedback.for_session_chain(
        app_name=thread.app_name, user_id=thread.user_id, session_id=thread.session_id
    )
    assert counted == {("customer", "negative"): 1}

    # The stored figures, as `support-bot stats` prints them.
    rows = dict(stats_rows(await database.stats.collect()))
    assert rows["feedback [billing_agent]"] == "0 helpful, 1 unhelpful"

    # The digest of the thread says so.
    job = DigestJob(
        db=database, summarizer=summarizer, client=bot.services.client,
        lead_channel="CLEAD", idle_after=0, owner=bot.services.owner,
    )  # fmt: skip
    [digest] = await job.run_once()
    assert digest.outcome == "posted"
    [posted] = [c for c in slack.calls_to("chat.postMessage") if c["channel"] == "CLEAD"]
    context = [e["text"] for b in posted["blocks"] if b["type"] == "context" for e in b["elements"]]
    assert "Feedback: customer marked 1 reply unhelpful" in context


async def test_feedback_changed_mind_and_other_people_count_separately(
    slack: FakeSlackApi, start_bot: StartBot, database: Any
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["Hello!"])))
    root = "1700001100.000100"
    block, where = await answered(bot, slack, "hi", root)
    for value, user in (("negative", "U1"), ("positive", "U1"), ("positive", "U2")):
        await bot.send_payload(click(block, value, user=user, **where))
    await bot.idle()
    # People, not clicks: U1's change of mind moved their mark, it added none.
    got = await metrics(bot)
    assert got['support_bot_feedback_total{agent="support_supervisor",value="negative"}'] == 0
    assert got['support_bot_feedback_total{agent="support_supervisor",value="positive"}'] == 2
    rows = dict(stats_rows(await database.stats.collect()))
    assert rows["feedback [support_supervisor]"] == "2 helpful, 0 unhelpful"

    report = await database.forget_user("U2")
    assert report.counts["feedback"] == 1
    rows = dict(stats_rows(await database.stats.collect()))
    assert rows["feedback [support_supervisor]"] == "1 helpful, 0 unhelpful"


async def test_feedback_on_an_unknown_reply_is_ignored(
    slack: FakeSlackApi, start_bot: StartBot, database: Any
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["Hello!"])))
    root = "1700001200.000100"
    block, where = await answered(bot, slack, "hi", root)
    # The user's own message is not a reply; a forged event id is no reply at all.
    for forged in ("feedback:e1", "feedback:e999", "feedback:x"):
        payload = click({**block, "block_id": forged}, "negative", **where)
        assert (await bot.send_payload(payload)).status == 200
    await bot.idle()
    assert "support_bot_feedback_total" not in str(await metrics(bot))
    assert (await database.stats.collect()).feedback == {}
