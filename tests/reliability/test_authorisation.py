"""Authorisation: /summary, /handoff, both shortcuts and a forged modal submission by a
non-member, for a thread in another channel, are refused every time, and nothing about
the thread (its words, its summary, its existence) leaks to Slack or to the summariser."""

from __future__ import annotations

import json
from pathlib import Path

from agents.models.scripted import ScriptedModel
from agents.summary.service import SummaryService
from bot.slack.actions import REFUSAL
from storage.threads import ThreadKey
from tests.e2e.harness import TEAM, BotHarness, channel_message, open_database
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

SECRET_ROOT = "1700000500.000100"
SECRET = "order SECRET-777 for acct 99-1234"
LINK = f"https://fake.slack.com/archives/CSECRET/p{SECRET_ROOT.replace('.', '')}"
ROUNDS = 5
AGENT = "billing_agent"


async def test_authorisation_non_member_is_refused_every_way_and_nothing_leaks(
    slack: FakeSlackApi, tmp_path: Path
) -> None:
    summary_model = ScriptedModel([])
    db = await open_database(tmp_path)
    bot = await BotHarness.start(
        slack,
        agent=support_tree(ScriptedModel([f"Noted: {SECRET}."])),
        db=db,
        summarizer=SummaryService(summary_model),
        support_lead_channel="CLEAD",
        user_rate_burst=1_000,  # every attempt must reach the authorisation check
    )
    try:
        slack.add_message("CSECRET", ts=SECRET_ROOT, text=SECRET, user="U9")
        await bot.send_event(
            channel_message(SECRET, ts=SECRET_ROOT, user="U9", channel="CSECRET", mention=True)
        )
        await bot.idle()
        key = ThreadKey(team_id=TEAM, channel_id="CSECRET", thread_ts=SECRET_ROOT)
        before = await db.threads.get(key)
        assert before is not None
        seen = len(slack.calls)

        attempts = 0
        for _ in range(ROUNDS):
            for text in (
                LINK,
                f"<{LINK}> public",
                f"{LINK}?thread_ts={SECRET_ROOT}&cid=CSECRET",
                f"<{LINK}|thread>",
            ):
                await bot.send_command("/summary", text, user="U1", channel="C1")
                attempts += 1
            for text in (f"{LINK} <@U1> take it", f"{LINK} billing_agent", f"{LINK} <@U9>"):
                await bot.send_command("/handoff", text, user="U1", channel="C1")
                attempts += 1
            await bot.send_payload(
                bot.message_shortcut(
                    "summarize_thread", channel="CSECRET", ts=SECRET_ROOT, thread_ts=SECRET_ROOT
                )
            )
            attempts += 1
            forged = {"team": TEAM, "channel": "CSECRET", "thread_ts": SECRET_ROOT}
            await bot.send_payload(
                {
                    "type": "view_submission",
                    "team": {"id": TEAM},
                    "user": {"id": "U1"},
                    "api_app_id": "A1",
                    "token": "legacy",
                    "trigger_id": f"t{attempts}",
                    "view": {
                        "id": "V1",
                        "type": "modal",
                        "callback_id": "handoff_modal",
                        "private_metadata": json.dumps(forged),
                        "state": {
                            "values": {"agent": {"value": {"selected_option": {"value": AGENT}}}}
                        },
                    },
                }
            )
            attempts += 1
            await bot.idle()
        after = await db.threads.get(key)
    finally:
        await bot.stop()
        await db.close()

    answers = slack.calls[seen:]
    refusals = [c for c in answers if c.args.get("text") == REFUSAL]
    assert len(refusals) == attempts
    leaked = [c for c in answers if "SECRET-777" in json.dumps(c.args) or "99-1234" in str(c.args)]
    assert leaked == []
    # Only reads of who may act (the channel's kind sets HANDOFF_POLICY's default) and
    # the refusals.
    assert {c.method for c in answers} <= {
        "conversations.info",
        "conversations.members",
        "response_url",
        "chat.postEphemeral",
    }
    assert summary_model.requests == []
    assert after == before
