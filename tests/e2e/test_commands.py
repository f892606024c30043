"""End to end: /summary, /handoff and both message shortcuts, with authorisation."""

from __future__ import annotations

import json
from typing import Any

from agents.models.scripted import ScriptedModel
from agents.summary.service import SummaryService
from storage.threads import ThreadKey
from tests.e2e.conftest import StartBot
from tests.e2e.harness import BotHarness, channel_message
from tests.e2e.replies import answers, context_text, wait_answers
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

ROOT = "1700000400.000100"
LINK = f"https://fake.slack.com/archives/C1/p{ROOT.replace('.', '')}"
RECORD = {
    "goal": "Get a refund for a double charge on order 4411",
    "facts": [{"text": "The user says order 4411 was charged twice", "sources": ["e1"]}],
    "decisions": [],
    "commitments": [{"text": "A refund for order 4411 is being processed", "sources": ["e2"]}],
    "open_questions": [],
}


async def _thread_with_history(
    slack: FakeSlackApi,
    start_bot: StartBot,
    summaries: list,
    *,
    later_answers: tuple[str, ...] = (),
    **settings: Any,
) -> BotHarness:
    """A thread whose first message was answered; `later_answers` answer the messages a
    test sends after it."""
    model = ScriptedModel(["A refund for order 4411 is being processed.", *later_answers])
    bot = await start_bot(
        support_tree(model),
        summarizer=SummaryService(ScriptedModel(summaries)),
        support_lead_channel="CLEAD",
        support_leads="ULEAD",
        **settings,
    )
    slack.add_message("C1", ts=ROOT, text="order 4411 was charged twice", user="U1")
    await bot.send_event(channel_message("order 4411 was charged twice", ts=ROOT, mention=True))
    await wait_answers(slack)
    await bot.idle()
    return bot


def ephemeral(slack: FakeSlackApi) -> list[str]:
    texts = [c.get("text", "") for c in slack.calls_to("response_url")]
    return texts + [c.get("text", "") for c in slack.calls_to("chat.postEphemeral")]


async def test_commands_summary_is_ephemeral_and_cites_messages(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await _thread_with_history(slack, start_bot, [json.dumps(RECORD)])
    resp = await bot.send_command("/summary", LINK)
    assert resp.status == 200
    await bot.idle()
    [reply] = slack.calls_to("response_url")
    assert reply["response_type"] == "ephemeral"
    assert "order 4411" in reply["text"]
    assert f"p{ROOT.replace('.', '')}" in json.dumps(reply["blocks"])  # e1 links to its message
    posts = [c for c in slack.calls_to("chat.postMessage") if "Thread summary" in c.get("text", "")]
    assert posts == []


async def test_commands_summary_public_posts_in_thread(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await _thread_with_history(slack, start_bot, [json.dumps(RECORD)])
    await bot.send_command("/summary", f"<{LINK}> public")
    await bot.idle()
    posts = slack.calls_to("chat.postMessage")
    [post] = [c for c in posts if "Thread summary" in c.get("text", "")]
    assert post["thread_ts"] == ROOT and post["channel"] == "C1"


async def test_commands_summary_failing_validation_shows_problems_not_text(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bad = {**RECORD, "goal": "Refund for order 4411, pre-approved by the CFO"}
    bot = await _thread_with_history(slack, start_bot, [json.dumps(bad), json.dumps(bad)])
    await bot.send_command("/summary", LINK)
    await bot.idle()
    [reply] = slack.calls_to("response_url")
    shown = reply["text"] + json.dumps(reply["blocks"])
    assert "Summary unavailable" in shown and "no summary passed validation" in shown
    assert "CFO" not in shown and "pre-approved" not in shown


async def test_commands_non_member_is_refused_and_learns_nothing(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await _thread_with_history(slack, start_bot, [])
    await bot.send_command("/summary", LINK, user="UOUTSIDER")
    await bot.send_command("/handoff", f"{LINK} billing_agent", user="UOUTSIDER")
    unseen = "https://fake.slack.com/archives/C1/p1700009999000100"
    await bot.send_command("/summary", unseen, user="UOUTSIDER")
    await bot.send_command("/handoff", f"{LINK} no_such_agent", user="UOUTSIDER")
    await bot.idle()
    texts = ephemeral(slack)
    assert len(texts) == 4 and len(set(texts)) == 1
    assert "4411" not in texts[0] and "billing_agent" not in texts[0]


async def test_commands_bad_link_unknown_thread_and_agent_get_clear_errors(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await _thread_with_history(slack, start_bot, [])
    await bot.send_command("/summary", "not-a-link")
    await bot.send_command("/summary", "https://fake.slack.com/archives/C1/p1700009999000100")
    await bot.send_command("/handoff", f"{LINK} nobody_agent")
    await bot.idle()
    texts = [c.get("text", "") for c in slack.calls_to("response_url")]
    assert any("no conversation" in t for t in texts)
    assert any("nobody_agent" in t for t in texts)
    # the syntax error is answered in the ack itself
    assert len(texts) == 2


async def test_commands_handoff_to_person_posts_record_and_stops_replies(
    slack: FakeSlackApi, start_bot: StartBot, database
) -> None:
    bot = await _thread_with_history(
        slack, start_bot, [json.dumps(RECORD)], later_answers=("Refund confirmed.",)
    )
    await bot.send_command("/handoff", f"{LINK} <@U2|bob> please call them")
    await bot.idle()
    posts = slack.calls_to("chat.postMessage")
    in_thread = [p for p in posts if p["channel"] == "C1" and "handed this thread off" in p["text"]]
    to_leads = [p for p in posts if p["channel"] == "CLEAD"]
    assert len(in_thread) == 1 and len(to_leads) == 1
    assert "<@U2>" in to_leads[0]["text"] and "order 4411" in json.dumps(to_leads[0]["blocks"])
    key = ThreadKey(team_id="T1", channel_id="C1", thread_ts=ROOT)
    assert (await database.threads.get(key)).status == "handed_off"

    before = len(answers(slack))
    await bot.send_event(channel_message("hello?", ts="1700000401.000100", thread_ts=ROOT))
    await bot.idle()
    assert len(answers(slack)) == before  # not answered without a mention
    await bot.send_event(
        channel_message("bot, again", ts="1700000402.000100", thread_ts=ROOT, mention=True)
    )
    await wait_answers(slack, before + 1)
    await bot.idle()
    assert (await database.threads.get(key)).status == "active"


async def test_commands_handoff_to_agent_starts_new_session_owned_by_agent(
    slack: FakeSlackApi, start_bot: StartBot, database
) -> None:
    bot = await _thread_with_history(
        slack, start_bot, [json.dumps(RECORD)], later_answers=("Refund confirmed.",)
    )
    key = ThreadKey(team_id="T1", channel_id="C1", thread_ts=ROOT)
    old = await database.threads.get(key)
    await bot.send_command("/handoff", f"{LINK} billing_agent")
    await bot.idle()
    new = await database.threads.get(key)
    assert new.session_id != old.session_id
    assert new.source_session_id == old.session_id and new.owner_agent == "billing_agent"
    session = await database.sessions.get_session(
        app_name=new.app_name, user_id=new.user_id, session_id=new.session_id
    )
    assert "order 4411" in session.events[0].text
    # The next message in the thread is answered by billing_agent.
    await bot.send_event(channel_message("status?", ts="1700000403.000100", thread_ts=ROOT))
    await wait_answers(slack, 2)
    await bot.idle()
    assert "billing_agent" in context_text(answers(slack)[-1])


async def test_commands_summary_shortcut_answers_requester(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await _thread_with_history(slack, start_bot, [json.dumps(RECORD)])
    reply_ts = answers(slack)[0]["thread_ts"]
    payload = bot.message_shortcut(
        "summarize_thread", channel="C1", ts="1700000400.000900", thread_ts=reply_ts
    )
    assert (await bot.send_payload(payload)).status == 200
    await bot.idle()
    [reply] = slack.calls_to("response_url")
    assert "order 4411" in reply["text"]


async def test_commands_handoff_shortcut_opens_modal_and_submission_hands_off(
    slack: FakeSlackApi, start_bot: StartBot, database
) -> None:
    bot = await _thread_with_history(slack, start_bot, [json.dumps(RECORD)])
    payload = bot.message_shortcut("handoff_thread", channel="C1", ts=ROOT, thread_ts=ROOT)
    await bot.send_payload(payload)
    await bot.idle()
    # The modal opens as a "checking" view and becomes the hand-off form once authorised.
    [opened] = slack.calls_to("views.open")
    [updated] = slack.calls_to("views.update")
    assert "callback_id" not in opened["view"] and "Checking" in json.dumps(opened["view"])
    view = updated["view"]
    assert view["callback_id"] == "handoff_modal"
    submission = bot.handoff_submission(
        user="ULEAD", private_metadata=view["private_metadata"], person="U2", note="VIP"
    )
    assert (await bot.send_payload(submission)).status == 200
    await bot.idle()
    key = ThreadKey(team_id="T1", channel_id="C1", thread_ts=ROOT)
    assert (await database.threads.get(key)).status == "handed_off"
    [confirmation] = slack.calls_to("chat.postEphemeral")
    assert confirmation["user"] == "ULEAD" and "<@U2>" in confirmation["text"]
