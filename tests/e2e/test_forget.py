"""End to end: deletion by speaker (issue 17 item 6). A second person writes in a
thread someone else started; `forget --user` removes what they said from that session,
whatever was derived from it, and the digest posted to the lead channel."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agents.models.scripted import ScriptedModel
from bot.config import Settings
from bot.ops.commands import forget
from bot.ops.running import bot_running
from storage.schema import digests, events
from storage.threads import ThreadKey
from tests.e2e.conftest import StartBot
from tests.e2e.harness import channel_message
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

ROOT = "1700000600.000100"
SECRET = "my email is u2@example.com and my card is 4111 1111 1111 1111"


async def _stored_text(db: Any) -> str:
    async with db.engine.connect() as conn:
        rows = (await conn.execute(sa.select(events.c.data, events.c.custom_metadata))).all()
        kept = (await conn.execute(sa.select(digests.c.record))).all()
    return json.dumps([list(map(str, r)) for r in rows] + [str(r[0]) for r in kept])


async def _two_speaker_thread(slack: FakeSlackApi, start_bot: StartBot) -> Any:
    model = ScriptedModel(["Happy to help with the charge.", "Thanks, I have noted that."])
    bot = await start_bot(support_tree(model), support_lead_channel="CLEAD")
    await bot.send_event(channel_message("order 4411 was charged twice", ts=ROOT, mention=True))
    await bot.idle()
    # U2 follows up in U1's thread (an active thread takes follow-ups without a mention).
    await bot.send_event(channel_message(SECRET, ts="1700000600.000300", user="U2", thread_ts=ROOT))
    await bot.idle()
    db = bot.services.db
    record = await db.threads.get(ThreadKey(team_id="T1", channel_id="C1", thread_ts=ROOT))
    assert record is not None and record.user_id == "U1"
    posted = slack.next_ts()
    slack.add_message("CLEAD", ts=posted, text=f"Digest: {SECRET}", user="UBOT")
    await db.digests.add(
        record={"goal": "refund", "facts": [{"text": SECRET, "sources": ["e3"]}]},
        source_session_id=record.session_id,
        thread=record.key,
        user_id="U1",
        slack_ts=posted,
    )
    return db, posted


def _settings(tmp_path: Path, slack: FakeSlackApi) -> Settings:
    return Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        slack_bot_token="xoxb-test",
        slack_api_url=slack.url,
        support_lead_channel="CLEAD",
        _env_file=None,
    )


async def test_forget_removes_a_speakers_messages_from_others_sessions_and_posted_digests(
    slack: FakeSlackApi, start_bot: StartBot, tmp_path: Path
) -> None:
    db, posted = await _two_speaker_thread(slack, start_bot)
    assert "u2@example.com" in await _stored_text(db)
    out = io.StringIO()
    assert await forget(_settings(tmp_path, slack), out, "U2") == 0
    stored = await _stored_text(db)
    assert "u2@example.com" not in stored
    assert "4111" not in stored
    # U1's own message and the bot's answer to it stay.
    assert "order 4411 was charged twice" in stored
    assert "Happy to help with the charge." in stored
    [deleted] = slack.calls_to("chat.delete")
    assert (deleted["channel"], deleted["ts"]) == ("CLEAD", posted)
    report = out.getvalue()
    assert "spoken_events  2" in report
    assert "digests" in report and "Deleted 1 posted digests from Slack" in report


async def test_forget_refuses_to_race_a_running_bot_on_sqlite(
    slack: FakeSlackApi, start_bot: StartBot, tmp_path: Path
) -> None:
    db, _ = await _two_speaker_thread(slack, start_bot)
    settings = _settings(tmp_path, slack)
    out = io.StringIO()
    with bot_running(settings.database_url):
        assert await forget(settings, out, "U2") == 1
    assert out.getvalue().startswith("Refused: a bot is running on")
    assert "u2@example.com" in await _stored_text(db)
    assert slack.calls_to("chat.delete") == []
