"""End to end: how many database transactions one Slack message costs (issue 18), by
counting every read and write transaction of the shipped storage on a real SQLite file."""

from __future__ import annotations

from agents.models.scripted import ScriptedModel
from tests.e2e.conftest import StartBot
from tests.e2e.harness import dm
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi
from tests.fixtures.transactions import count_transactions


async def test_transactions_per_message_stay_within_budget(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel(["first answer", "second answer"])
    bot = await start_bot(support_tree(model))
    seen = count_transactions(bot.services.db)
    root = "1700000600.000100"
    await bot.send_event(dm("my invoice is wrong", ts=root))
    await bot.idle()
    first = dict(seen)
    seen.clear()
    await bot.send_event(dm("still wrong", ts="1700000600.000200", thread_ts=root))
    await bot.idle()
    follow_up = dict(seen)
    assert len(model.requests) == 2
    # First message: accept with the DM's conversation placement (one transaction on
    # the ack path), thread + empty session, the user's event appended with the message
    # started, the reply's append, finish-and-touch (a reply complete at once is posted
    # whole: no stream to record); reads: the thread with the earlier-message check, the
    # session.
    assert first == {"write": 5, "read": 2}
    # A follow-up has no thread to map (its DM conversation is kept active in the
    # accept's own transaction), and the read of its thread also finds its session.
    assert follow_up == {"write": 4, "read": 2}
