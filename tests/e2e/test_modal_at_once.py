"""End to end: the hand-off modal opens at once (issue 41 item 8).

A shortcut's `trigger_id` lasts 3 s, so the modal must not wait for a model slot: with
every slot of the shared limit held, `views.open` (a "checking" view) and the
authorised form (`views.update`) still reach Slack before the slot is given back.
"""

from __future__ import annotations

import asyncio
import json

from agents.models.scripted import ScriptedModel
from bot.threads.admission import Priority
from tests.e2e.conftest import StartBot
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

ROOT = "1700000700.000100"


async def test_modal_opens_while_every_model_slot_is_held(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])), max_concurrent_invocations=1)
    held, release = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def occupy() -> None:
        held.set()
        await release.wait()
        order.append("slot freed")

    bot.services.worker.run(occupy(), Priority.REPLY)
    await held.wait()
    shortcut = bot.message_shortcut("handoff_thread", channel="C1", ts=ROOT, thread_ts=ROOT)
    assert (await bot.send_payload(shortcut)).status == 200
    await slack.wait_for("views.update")
    order.append("modal shown")
    release.set()
    await bot.idle()
    assert order == ["modal shown", "slot freed"]
    [opened] = slack.calls_to("views.open")
    assert opened["trigger_id"] == shortcut["trigger_id"]
    [form] = slack.calls_to("views.update")
    assert form["view"]["callback_id"] == "handoff_modal"
    assert json.loads(form["view"]["private_metadata"])["thread_ts"] == ROOT
