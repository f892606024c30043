"""End to end: what a Slack request leaves behind. Bolt builds a context per request
whose assistant helpers refer back to it; the bot releases it after dispatch, so a
request's objects are freed by reference counting, not left for the garbage collector
(under load they were most of its work, and each collection holds the event loop)."""

from __future__ import annotations

import gc

from slack_bolt.context.async_context import AsyncBoltContext

from agents.models.scripted import ScriptedModel
from tests.e2e.conftest import StartBot
from tests.e2e.harness import collector_off, dm
from tests.e2e.replies import answers
from tests.e2e.test_panel import thread_started
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi


def live_contexts() -> int:
    return sum(isinstance(o, AsyncBoltContext) for o in gc.get_objects())


async def test_requests_leave_no_bolt_context_for_the_collector(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["first answer", "second answer"])))
    with collector_off():
        before = live_contexts()
        # A top-level DM, a reply in its thread (the assistant's helpers attached), and a
        # panel thread opening.
        assert (await bot.send_event(dm("help", ts="1700000900.000100"))).status == 200
        await bot.idle()
        reply = dm("more", ts="1700000900.000200", thread_ts="1700000900.000100")
        assert (await bot.send_event(reply)).status == 200
        await bot.idle()
        assert (await bot.send_event(thread_started("1700000900.000300"))).status == 200
        await slack.wait_for("assistant.threads.setSuggestedPrompts")
        await bot.idle()
        assert live_contexts() == before
    assert len(answers(slack)) == 2
