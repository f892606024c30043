"""End to end: messages in, replies out (streamed, as shipped), over real HTTP."""

from __future__ import annotations

from agents.models.scripted import ScriptedModel, transfer
from bot.slack.message_ts import message_ts
from tests.e2e.conftest import StartBot
from tests.e2e.harness import channel_message, dm
from tests.e2e.replies import context_text, shown, wait_replies
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi


async def test_conversation_dm_gets_a_reply_naming_agent(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["Hello! How can I help?"])))
    resp = await bot.send_event(dm("hi there", ts="1700000001.000100"))
    assert resp.status == 200
    await wait_replies(slack, "D1")
    await bot.idle()
    [reply] = await wait_replies(slack, "D1")
    assert reply["thread_ts"] == "1700000001.000100"
    assert "Hello! How can I help?" in shown(reply)
    assert "support_supervisor" in context_text(reply)


async def test_conversation_channel_mention_starts_thread_session(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["Hi from the channel"])))
    await bot.send_event(
        channel_message("help", ts="1700000002.000100", mention=True, kind="app_mention")
    )
    await wait_replies(slack, "C1")
    await bot.idle()
    [reply] = await wait_replies(slack, "C1")
    assert "Hi from the channel" in shown(reply)
    assert reply["thread_ts"] == "1700000002.000100"


async def test_conversation_transfer_answers_as_billing_and_keeps_owner(
    slack: FakeSlackApi, start_bot: StartBot, database
) -> None:
    model = ScriptedModel(
        [transfer("billing_agent"), "Your refund is on its way.", "The invoice is INV-9."]
    )
    bot = await start_bot(support_tree(model))
    root = "1700000010.000100"
    await bot.send_event(channel_message("I was charged twice", ts=root, mention=True))
    await wait_replies(slack, "C1")
    await bot.idle()
    [first] = await wait_replies(slack, "C1")
    assert "Your refund is on its way." in shown(first)
    assert "billing_agent" in context_text(first)
    assert "support_supervisor → billing_agent" in context_text(first)

    # The next human message in the thread needs no mention and goes to billing_agent.
    await bot.send_event(channel_message("which invoice?", ts="1700000011.000100", thread_ts=root))
    await wait_replies(slack, "C1", 2)
    await bot.idle()
    second = (await wait_replies(slack, "C1", 2))[1]
    assert "INV-9" in shown(second)
    assert "billing_agent" in context_text(second)
    assert "→" not in context_text(second)
    assert model.requests[-1].agent_name == "billing_agent"
    model.assert_complete()


async def test_conversation_unmentioned_channel_message_is_ignored(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])))
    resp = await bot.send_event(channel_message("just chatting", ts="1700000020.000100"))
    assert resp.status == 200
    await bot.idle()
    assert slack.calls_to("chat.postMessage") == slack.calls_to("chat.startStream") == []


async def test_conversation_ignores_own_bot_edits_and_joins_quietly(
    slack: FakeSlackApi, start_bot: StartBot, caplog
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])))
    events = [
        {**dm("mine", ts="1700000030.000100"), "user": "UBOT", "bot_id": "BBOT"},
        {**dm("other bot", ts="1700000031.000100"), "bot_id": "BOTHER", "subtype": "bot_message"},
        {
            "type": "message",
            "subtype": "message_changed",
            "channel": "D1",
            "channel_type": "im",
            "ts": "1700000032.000100",
            "message": {"text": "edited", "user": "U1"},
        },
        {
            "type": "message",
            "subtype": "message_deleted",
            "channel": "D1",
            "channel_type": "im",
            "ts": "1700000033.000100",
            "deleted_ts": "1700000001.000100",
        },
        {
            "type": "message",
            "subtype": "channel_join",
            "channel": "C1",
            "user": "U2",
            "channel_type": "channel",
            "ts": "1700000034.000100",
            "text": "<@U2> joined",
        },
    ]
    for event in events:
        assert (await bot.send_event(event)).status == 200
    await bot.idle()
    assert slack.calls_to("chat.postMessage") == slack.calls_to("chat.startStream") == []
    assert "Unhandled request" not in caplog.text


async def test_conversation_escapes_broadcasts_in_model_output(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["Attention <!channel> and <@U2> & co"])))
    await bot.send_event(dm("ping everyone", ts="1700000040.000100"))
    await wait_replies(slack, "D1")
    await bot.idle()
    [reply] = await wait_replies(slack, "D1")
    text = shown(reply)
    assert "<!channel>" not in text and "<@U2>" not in text
    assert "&lt;!channel&gt;" in text and "&amp;" in text


async def test_conversation_long_reply_is_split_not_cut(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    words = " ".join(f"word{i}" for i in range(1500))
    bot = await start_bot(support_tree(ScriptedModel([words])), max_message_chars=3000)
    await bot.send_event(dm("long please", ts="1700000050.000100"))
    await wait_replies(slack, "D1", 2)
    await bot.idle()
    replies = await wait_replies(slack, "D1")
    assert len(replies) > 1, "expected continuation messages"
    assert " ".join(shown(m) for m in replies).split() == words.split()


async def test_conversation_model_failure_leaves_notice_flag_and_user_event(
    slack: FakeSlackApi, start_bot: StartBot, database
) -> None:
    from agents.models.base import ModelError
    from storage.threads import ThreadKey

    bot = await start_bot(support_tree(ScriptedModel([ModelError("upstream down")])))
    await bot.send_event(dm("my order is late", ts="1700000060.000100"))
    await wait_replies(slack, "D1")
    await bot.idle()
    [notice] = await wait_replies(slack, "D1")
    assert "saved" in shown(notice) and "person" in shown(notice)
    key = ThreadKey(team_id="T1", channel_id="D1", thread_ts="1700000060.000100")
    record = await database.threads.get(key)
    assert record.needs_attention
    session = await database.sessions.get_session(
        app_name=record.app_name, user_id=record.user_id, session_id=record.session_id
    )
    assert session.events[0].author == "user"
    assert session.events[0].text == "my order is late"
    assert message_ts(session.events[0]) == "1700000060.000100"


async def test_conversation_rate_limited_post_is_retried_after_retry_after(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel(["ok"])))
    slack.fail("chat.postMessage", status=429, times=1, retry_after=1)
    await bot.send_event(dm("hello", ts="1700000070.000100"))
    await wait_replies(slack, "D1")
    await bot.idle()
    # The reply, complete at once, is one post: retried after Retry-After, posted once.
    attempts = [a for a in slack.attempts if a.method == "chat.postMessage"]
    assert [a.status for a in attempts] == [429, 200]
    assert attempts[1].at - attempts[0].at >= 1.0
    assert len(slack.calls_to("chat.postMessage")) == 1
