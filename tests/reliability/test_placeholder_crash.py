"""A crash while a reply replaces its placeholder under its owner's name: the
placeholder (posted under the bot's own name) is deleted and the reply posted anew
(`bot.slack.reply_posting`). Killed after the delete, whether or not the new post made
it, the restart leaves the thread exactly one reply."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.slack.message_ts import message_ts, turn_metadata
from bot.slack.render.blocks import THINKING_TEXT
from bot.slack.streaming import reply_metadata
from bot.threads.turn import run_turn
from tests.e2e.replies import shown
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import bot_messages, start_echo_bot
from tests.reliability.test_stream_crash import DEAD, accepted_by_the_dead, sweep


@pytest.mark.parametrize("posted", [True, False])
async def test_recovery_after_a_deleted_placeholder_leaves_one_reply(
    slack: FakeSlackApi, tmp_path: Path, posted: bool
) -> None:
    db, bot = await start_echo_bot(slack, tmp_path)
    services = bot.services
    root, invocation = "1700000980.000100", "inv-renamed"
    try:
        tracked, record = await accepted_by_the_dead(db, root)
        placeholder = await services.client.chat_postMessage(
            channel="D1", thread_ts=root, text=THINKING_TEXT
        )
        await db.inflight.start(
            tracked, owner=DEAD, invocation_id=invocation, now=time.time(),
            placeholder_ts=str(placeholder["ts"]),
        )  # fmt: skip
        await run_turn(
            services.runner, user_id="U1", session_id=record.session_id, text="refund?",
            invocation_id=invocation, metadata=turn_metadata(root, placeholder["ts"]),
        )  # fmt: skip
        # The dead process deleted the placeholder to post the reply under its owner.
        await services.client.chat_delete(channel="D1", ts=placeholder["ts"])
        if posted:
            await services.client.chat_postMessage(
                channel="D1", thread_ts=root, text="support_supervisor: Answer to: refund?",
                metadata=reply_metadata("support_supervisor", invocation),
            )  # fmt: skip
        posts_before = len(slack.calls_to("chat.postMessage"))

        await sweep(bot, db)
        session = await db.sessions.of_thread(record)
    finally:
        await bot.stop()
        await db.close()

    [message] = bot_messages(slack, "D1", root)
    assert "Answer to: refund?" in shown(message)
    new_posts = slack.calls_to("chat.postMessage")[posts_before:]
    assert len(new_posts) == (0 if posted else 1)
    if not posted:
        # Stored as shown: in the new message, never the deleted placeholder.
        [reply] = [e for e in session.events if e.author == "support_supervisor" and e.text]
        assert message_ts(reply) == message["ts"]
