"""Customers first on the embedded model's one slot, end to end over real HTTP with
signed Slack requests: the shipped assembly for the embedded model (`Models.slot`,
`window_hooks`, compaction on, decide-first, `SUMMARY_MODE=incremental`) on a fake
server that answers one request at a time.

A reply that arrives while a window is being summarised goes first: the summary's call
in the slot is given up, the reply is served, and the window is summarised afterwards,
whole, so the digest still gets it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.models.slot import ModelSlot
from agents.summary.agent import SUMMARIZER_NAME
from bot.config import Settings
from bot.models import Models
from bot.wiring import build_summarizer, window_hooks, work_limit
from storage.threads import ThreadKey
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, channel_message
from tests.e2e.replies import answers, wait_answers
from tests.e2e.trees import support_tree
from tests.fakes.one_slot_model import OneSlotModel
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.transcript_summarizer import TranscriptSummarizer

ROOT = "1700004000.000100"
MESSAGES = (
    "Order A-1001 was charged twice",
    "The second charge is 12.50 USD on card ending 4242",
    "Also, when will the refund arrive?",
)


async def test_a_reply_arriving_while_a_window_is_summarised_goes_first(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path
) -> None:
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        slack_bot_token="xoxb-test",
        slack_api_url=slack.url,
        support_lead_channel="CLEAD",
        compaction_interval=2,
        _env_file=None,
    )
    assert settings.summary_mode == "incremental" and settings.model is None  # as shipped
    model = OneSlotModel(TranscriptSummarizer(), hold_summaries=True)
    slot = ModelSlot()
    models = Models(
        main=model,
        summary=model,
        compaction=model,
        factory=lambda _: model,
        label="test",
        slot=slot,
    )
    limit = work_limit(settings)
    bot = await start_bot(
        support_tree(model),  # type: ignore[arg-type]
        summarizer=build_summarizer(settings, database, models),
        compaction_model=models.background(model),
        after_invocation=window_hooks(settings, database, models, limit),
        limit=limit,
        model_slot=slot,
        compaction_interval=2,
        support_lead_channel="CLEAD",
    )

    async def say(turn: int) -> None:
        ts = ROOT if turn == 0 else f"1700004000.{turn + 100:06d}"
        text = MESSAGES[turn]
        slack.add_message("C1", ts=ts, text=text, user="U1", thread_ts=ROOT if turn else None)
        event = channel_message(
            text, ts=ts, user="U1", thread_ts=ROOT if turn else None, mention=turn == 0
        )
        await bot.send_event(event)

    await say(0)
    await wait_answers(slack, 1)
    await say(1)  # closes the first window: its summary takes the slot and stays there
    await wait_answers(slack, 2)
    await model.summary_in_slot.wait()
    before = len(model.served)

    await say(2)
    try:
        await wait_answers(slack, 3)
        served_by_then = model.served[before:]
    finally:
        model.release()  # the held summary may finish now
    # The reply was served while the window summary waited: every call of the turn
    # finished before any summary call did, and the summary's call was given up once.
    assert SUMMARIZER_NAME not in served_by_then
    assert model.cancelled == [SUMMARIZER_NAME] and slot.yielded == 1
    assert [a["text"] for a in answers(slack)] == [
        "support_supervisor: Answer 1.",
        "support_supervisor: Answer 2.",
        "support_supervisor: Answer 3.",
    ]
    await bot.idle()
    await bot.services.runner.drain()
    # Afterwards, the window was summarised, whole, and stored once.
    assert SUMMARIZER_NAME in model.served[before + len(served_by_then) :]
    thread = await database.threads.get(ThreadKey(team_id=TEAM, channel_id="C1", thread_ts=ROOT))
    session = await database.sessions.get_session(
        app_name=thread.app_name, user_id=thread.user_id, session_id=thread.session_id
    )
    conversation = [(e.author, e.text) for e in session.events if e.text and not e.is_compaction]
    assert conversation == [
        ("user", MESSAGES[0]),
        ("support_supervisor", "Answer 1."),
        ("user", MESSAGES[1]),
        ("support_supervisor", "Answer 2."),
        ("user", MESSAGES[2]),
        ("support_supervisor", "Answer 3."),
    ]
    [window] = await database.windows.windows(session.id)
    assert window.status == "passed" and window.span.end_seq < session.events[-2].seq
    assert "A-1001" in str(window.record)
    # The digest gets it: the merged record holds the window's values.
    [outcome] = await bot.digest_job().run_once()
    assert outcome.outcome == "posted"
