"""A crash in the middle of a streamed reply: on restart every thread gets its reply
finished in the streamed message, or is told in it, and never a second message.

First as it happens (SIGKILL of a bot process whose model stalls mid-reply, then a
restart), then each state a crash can leave a stream in, recovered in-process.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from bot.slack.conversation import inflight_key, thread_key
from bot.slack.message_ts import turn_metadata
from bot.slack.messages import IncomingMessage
from bot.slack.recovery import recover
from bot.slack.render.blocks import INTERRUPTED_TEXT
from bot.slack.streaming import reply_metadata
from bot.threads.turn import ensure_thread, run_turn
from tests.e2e.harness import BotHarness, dm
from tests.e2e.replies import context_text, finished, shown
from tests.fakes.openai_server import FakeOpenAIServer, Reply, text
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import (
    BotProcess,
    Sender,
    bot_messages,
    settled,
    start_echo_bot,
    wait_until,
)
from tests.reliability.test_crash import bot_env

THREADS = 6


def stalling_model(phase: dict[str, bool]) -> Any:
    """Answers with the user's words; while `phase["stall"]`, the stream stops after its
    first words and hangs (the process is killed with the reply half shown)."""

    def answer(body: dict[str, Any]) -> Reply:
        said = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        reply = text(f"Answer to: {said}. Your refund is on its way.")
        return reply.stalled(3) if phase["stall"] else reply

    return answer


async def test_sigkill_mid_stream_tells_each_thread_once_in_its_streamed_message(
    slack: FakeSlackApi, openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    phase = {"stall": True}
    openai.add(*[stalling_model(phase)] * 100)
    db_file = tmp_path / "bot.db"
    env = bot_env(slack, openai, db_file)
    bot = BotProcess(env, tmp_path / "bot.log")
    await bot.start()
    sender = Sender(bot.url)
    roots: list[tuple[str, str]] = []
    try:
        for i in range(THREADS):
            ts = slack.next_ts()
            # One DM per customer: top-level messages of one DM are one conversation.
            channel, user = f"D{i}", f"U{i}"
            slack.add_message(channel, ts=ts, text=f"question {i}", user=user)
            event = dm(f"question {i}", ts=ts, user=user, channel=channel)
            assert await sender.event(event, event_id=f"EvS{i}") == 200
            roots.append((channel, ts))

        def half_shown() -> bool:
            streams = [
                m
                for channel, _ in roots
                for m in slack.messages.get(channel, {}).values()
                if m.get("streaming")
            ]
            if len([m for m in streams if m["text"]]) < THREADS:
                return False
            # Mid-stream: each stream recorded, as it is right after it starts (a kill in
            # between, a write's time, leaves the stream unrecorded: see the README).
            with sqlite3.connect(db_file) as conn:
                query = "SELECT count(*) FROM inflight WHERE stream_ts IS NOT NULL"
                return int(conn.execute(query).fetchone()[0]) >= THREADS

        await wait_until(half_shown, within=40, what="every reply half streamed")
        bot.kill()
        phase["stall"] = False
        restarted = BotProcess({**env}, tmp_path / "bot.log")
        await restarted.start()
        threads = {(channel, root): 1 for channel, root in roots}
        await wait_until(lambda: settled(slack, threads), within=40, what="every thread told")
        assert restarted.stop() == 0
    finally:
        await sender.close()
    for channel, root in roots:
        [message] = bot_messages(slack, channel, root)
        assert finished(message) and message["text"] == INTERRUPTED_TEXT
    assert not slack.calls_to("chat.postMessage")  # nothing posted besides the streams
    assert len(slack.calls_to("chat.startStream")) == THREADS
    with sqlite3.connect(db_file) as conn:
        assert conn.execute("SELECT count(*) FROM inflight").fetchone()[0] == 0
        flagged = conn.execute("SELECT count(*) FROM threads WHERE needs_attention").fetchone()
    assert flagged[0] == THREADS


DEAD = "dead-process"


async def sweep(bot: BotHarness, db: Any) -> None:
    """The start-up recovery sweep, run to its end: it leaves nothing in flight and
    resumes the one started message."""
    report = await recover(bot.services, startup=True)
    await bot.idle()
    assert await db.inflight.count() == 0 and report.resumed == 1


async def accepted_by_the_dead(db: Any, root: str) -> tuple[Any, Any]:
    """A DM `root` that a dead process accepted, with its thread mapped: (its in-flight
    key, the thread record)."""
    msg = IncomingMessage("T1", "D1", "im", "U1", "refund?", root, None, mentioned=False)
    key, tracked = thread_key(msg), inflight_key(msg)
    record = await ensure_thread(
        db, key, None, new_session_id=uuid.uuid4().hex, app_name="support_bot", user_id="U1"
    )
    await db.inflight.accept(
        tracked, thread_ts=root, message=msg.to_record(), delivery_key="d1", owner=DEAD,
        now=time.time(),
    )  # fmt: skip
    return tracked, record


@pytest.mark.parametrize("state", ["reply_stored", "nothing_stored", "reply_shown"])
async def test_recovery_finishes_an_abandoned_stream_in_place(
    slack: FakeSlackApi, tmp_path: Path, state: str
) -> None:
    db, bot = await start_echo_bot(slack, tmp_path)
    services = bot.services
    root, invocation = "1700000900.000100", "inv-dead"
    try:
        # What a process killed mid-stream leaves behind: its in-flight row with the
        # stream's ts, the stream half shown, and (maybe) the stored reply.
        tracked, record = await accepted_by_the_dead(db, root)
        started = await services.client.chat_startStream(
            channel="D1", thread_ts=root, task_display_mode="timeline"
        )
        ts = str(started["ts"])
        await db.inflight.start(
            tracked, owner=DEAD, invocation_id=invocation, now=time.time(), stream_ts=ts
        )
        chunk = {"type": "markdown_text", "text": "Answer to"}
        await services.client.chat_appendStream(channel="D1", ts=ts, chunks=[chunk])
        if state != "nothing_stored":
            await run_turn(
                services.runner, user_id="U1", session_id=record.session_id, text="refund?",
                invocation_id=invocation, metadata=turn_metadata(root, ts),
            )  # fmt: skip
        if state == "reply_shown":
            metadata = reply_metadata("support_supervisor")
            await services.client.chat_stopStream(channel="D1", ts=ts, metadata=metadata)
        updates_before = len(slack.calls_to("chat.update"))

        await sweep(bot, db)
    finally:
        await bot.stop()
        await db.close()

    [message] = bot_messages(slack, "D1", root)
    assert message["ts"] == ts and finished(message)
    assert not slack.calls_to("chat.postMessage")
    if state == "reply_shown":
        assert len(slack.calls_to("chat.update")) == updates_before  # it had landed
        assert message["text"] == "Answer to"
    elif state == "reply_stored":
        assert shown(message) == "Answer to: refund?"
        assert "support_supervisor" in context_text(message)
    else:
        assert message["text"] == INTERRUPTED_TEXT


@pytest.mark.parametrize("posted", [True, False])
async def test_recovery_finds_a_reply_posted_whole_by_its_invocation(
    slack: FakeSlackApi, tmp_path: Path, posted: bool
) -> None:
    """A reply complete at once is posted as a new message, with no stream to record:
    killed after that post and before the finish, the restart finds the reply by its
    invocation and posts nothing more; killed before it, the restart posts it once."""
    db, bot = await start_echo_bot(slack, tmp_path)
    services = bot.services
    root, invocation = "1700000950.000100", "inv-whole"
    try:
        tracked, record = await accepted_by_the_dead(db, root)
        await db.inflight.start(tracked, owner=DEAD, invocation_id=invocation, now=time.time())
        await run_turn(
            services.runner, user_id="U1", session_id=record.session_id, text="refund?",
            invocation_id=invocation, metadata=turn_metadata(root, None),
        )  # fmt: skip
        # Another reply of ours later in the thread (an earlier turn's, say) is not it.
        other = reply_metadata("support_supervisor", "inv-other")
        await services.client.chat_postMessage(
            channel="D1", thread_ts=root, text="Earlier answer", metadata=other
        )
        if posted:
            await services.client.chat_postMessage(
                channel="D1", thread_ts=root, text="Answer to: refund?",
                metadata=reply_metadata("support_supervisor", invocation),
            )  # fmt: skip
        posts_before = len(slack.calls_to("chat.postMessage"))

        await sweep(bot, db)
    finally:
        await bot.stop()
        await db.close()

    new_posts = slack.calls_to("chat.postMessage")[posts_before:]
    if posted:
        assert new_posts == []
    else:
        [reply] = new_posts
        assert "Answer to: refund?" in reply["text"]
        assert reply["metadata"]["event_payload"]["invocation_id"] == invocation
