"""End to end: deletion by speaker (issue 17 item 6). A second person writes in a
thread someone else started; `forget --user` removes what they said from that session,
whatever was derived from it, and every page of the digest the digest job posted to the
lead channel."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agents.compaction import COMPACTION_AUTHOR
from agents.llm.agent import LlmAgent
from agents.models.scripted import ScriptedModel, transfer
from agents.summary import SummaryService
from bot.config import Settings
from bot.models import Models
from bot.ops.commands import forget
from bot.ops.running import bot_running
from bot.wiring import build_summarizer, window_hooks, work_limit
from storage.forget import HANDOFF_REDACTED
from storage.schema import (
    deliveries,
    digests,
    dm_conversations,
    events,
    memory,
    sessions,
    summary_runs,
    summary_windows,
    user_state,
)
from storage.threads import ThreadKey
from tests.e2e.conftest import StartBot
from tests.e2e.harness import channel_message, dm
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.transcript_summarizer import TranscriptSummarizer

ROOT = "1700000600.000100"
SECRET = "my email is u2@example.com and my card is 4111 1111 1111 1111"


async def _stored_text(db: Any) -> str:
    async with db.engine.connect() as conn:
        rows = (await conn.execute(sa.select(events.c.data, events.c.custom_metadata))).all()
        kept = (await conn.execute(sa.select(digests.c.record))).all()
    return json.dumps([list(map(str, r)) for r in rows] + [str(r[0]) for r in kept])


def _long_record() -> dict[str, Any]:
    """A valid digest record long enough to take two Slack messages (over 50 blocks of
    3,000 characters): many distinct facts about U2's card message, which they cite."""
    rng = random.Random(17)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "da"]
    vocabulary = ["".join(rng.choice(syllables) for _ in range(3)) for _ in range(3000)]

    def fact() -> str:
        words = " ".join(rng.choice(vocabulary) for _ in range(380))
        return f"{words} concerning the card"

    facts = [{"text": fact(), "sources": ["e3"]} for _ in range(56)]
    return {
        "goal": "Refund the double charge on order 4411",
        "facts": [
            {"text": "Order 4411 was charged twice", "sources": ["e1"]},
            {"text": "The second person shared u2@example.com", "sources": ["e3"]},
            *facts,
        ],
        "decisions": [],
        "commitments": [],
        "open_questions": [],
    }


async def _two_speaker_thread(slack: FakeSlackApi, start_bot: StartBot) -> tuple[Any, list[str]]:
    model = ScriptedModel(["Happy to help with the charge.", "Thanks, I have noted that."])
    summaries = SummaryService(ScriptedModel([json.dumps(_long_record())]))
    bot = await start_bot(support_tree(model), summarizer=summaries, support_lead_channel="CLEAD")
    await bot.send_event(channel_message("order 4411 was charged twice", ts=ROOT, mention=True))
    await bot.idle()
    # U2 follows up in U1's thread (an active thread takes follow-ups without a mention).
    await bot.send_event(channel_message(SECRET, ts="1700000600.000300", user="U2", thread_ts=ROOT))
    await bot.idle()
    db = bot.services.db
    record = await db.threads.get(ThreadKey(team_id="T1", channel_id="C1", thread_ts=ROOT))
    assert record is not None and record.user_id == "U1"
    [digest] = await bot.digest_job().run_once()
    assert digest.outcome == "posted", digest.problems
    pages = sorted(slack.messages["CLEAD"], key=float)
    assert len(pages) == 2 and "u2@example.com" in json.dumps(slack.messages["CLEAD"])
    return db, pages


def _settings(tmp_path: Path, slack: FakeSlackApi, **values: Any) -> Settings:
    return Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        slack_bot_token="xoxb-test",
        slack_api_url=slack.url,
        support_lead_channel="CLEAD",
        _env_file=None,
        **values,
    )


async def test_forget_removes_a_speakers_messages_from_others_sessions_and_posted_digests(
    slack: FakeSlackApi, start_bot: StartBot, tmp_path: Path
) -> None:
    db, pages = await _two_speaker_thread(slack, start_bot)
    assert "u2@example.com" in await _stored_text(db)
    out = io.StringIO()
    assert await forget(_settings(tmp_path, slack), out, "U2") == 0
    stored = await _stored_text(db)
    assert "u2@example.com" not in stored
    assert "4111" not in stored
    # U1's own message and the bot's answer to it stay.
    assert "order 4411 was charged twice" in stored
    assert "Happy to help with the charge." in stored
    # Both pages of the digest are gone from the lead channel.
    deleted = [(c["channel"], c["ts"]) for c in slack.calls_to("chat.delete")]
    assert sorted(deleted) == [("CLEAD", ts) for ts in pages]
    assert slack.messages["CLEAD"] == {}
    report = out.getvalue()
    counts = dict(line.split() for line in report.splitlines()[1:-1])
    assert counts["spoken_events"] == "2" and counts["digest_messages"] == "2"
    assert "Deleted 2 posted digest messages from Slack" in report


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


async def _derived(db: Any, session_id: str) -> dict[str, int]:
    """What is stored about `session_id` besides its events: compaction summaries,
    window records, memory, summary runs and digests."""
    async with db.engine.connect() as conn:

        async def count(table: sa.Table, *where: Any) -> int:
            query = sa.select(sa.func.count()).select_from(table).where(*where)
            return int((await conn.execute(query)).scalar_one())

        pk = sa.select(sessions.c.pk).where(sessions.c.session_id == session_id)
        return {
            "compactions": await count(
                events, events.c.session_pk.in_(pk), events.c.author == COMPACTION_AUTHOR
            ),
            "windows": await count(summary_windows, summary_windows.c.session_id == session_id),
            "memory": await count(memory, memory.c.session_id == session_id),
            "summary_runs": await count(summary_runs, summary_runs.c.session_id == session_id),
            "digests": await count(digests, digests.c.source_session_id == session_id),
        }


async def test_forget_clears_what_quotes_a_speaker_in_another_users_session_and_its_handoff(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path
) -> None:
    """U2 speaks once in U1's thread, which compacts twice, writes window records, gets a
    digest (memory, summary runs) and is then handed to an agent: forgetting U2 leaves none
    of what was derived from that session, redacts the hand-off record, and the session
    loads whole again (no compaction pointer hides its first turns)."""
    settings = _settings(
        tmp_path, slack, summary_mode="incremental", compaction_interval=2, model="openai/scripted"
    )
    model = ScriptedModel([f"Answer {n}." for n in range(5)])
    # Five turns compact twice (`compaction_interval=2`).
    compaction = ScriptedModel([f"Summary {n}: U2 wrote u2@example.com." for n in range(2)])
    summaries = TranscriptSummarizer()
    models = Models(
        main=model, summary=summaries, compaction=compaction, factory=lambda _: model, label="t"
    )
    limit = work_limit(settings)
    bot = await start_bot(
        support_tree(model),
        summarizer=build_summarizer(settings, database, models),
        compaction_model=compaction,
        after_invocation=window_hooks(settings, database, models, limit),
        limit=limit,
        compaction_interval=2,
        summary_mode="incremental",
        support_lead_channel="CLEAD",
    )
    speakers = ["U1", "U2", "U1", "U1", "U1"]
    for turn, user in enumerate(speakers):
        text = SECRET if user == "U2" else f"order 4411, question {turn}"
        ts = ROOT if turn == 0 else f"1700000600.{turn + 200:06d}"
        thread_ts = None if turn == 0 else ROOT
        await bot.send_event(
            channel_message(text, ts=ts, user=user, thread_ts=thread_ts, mention=turn == 0)
        )
        await bot.idle()
        await bot.services.runner.drain()
    key = ThreadKey(team_id="T1", channel_id="C1", thread_ts=ROOT)
    thread = await database.threads.get(key)
    assert thread is not None and thread.user_id == "U1"
    source = thread.session_id
    [digest] = await bot.digest_job().run_once()
    assert digest.outcome == "posted", digest.problems
    link = f"https://fake.slack.com/archives/C1/p{ROOT.replace('.', '')}"
    await bot.send_command("/handoff", f"{link} billing_agent")
    await bot.idle()
    handed = await database.threads.get(key)
    assert handed is not None and handed.session_id != source
    before = await _derived(database, source)
    assert before["compactions"] >= 2 and before["windows"] >= 1
    assert before["memory"] >= 1 and before["summary_runs"] >= 1 and before["digests"] == 1
    [record] = (await _session(database, handed)).events
    assert "u2@example.com" in record.text

    out = io.StringIO()
    assert await forget(settings, out, "U2") == 0
    assert await _derived(database, source) == dict.fromkeys(before, 0)
    assert "u2@example.com" not in await _stored_text(database)
    assert "Redacted 1 hand-off records" in out.getvalue()
    # The record still routes the thread to its agent, without its text.
    [redacted] = (await _session(database, handed)).events
    assert redacted.text == HANDOFF_REDACTED
    assert redacted.actions.transfer_to_agent == "billing_agent"
    # The source session loads from its first message again.
    loaded = await _session(database, thread)
    assert [e.text for e in loaded.events if e.author == "user"][:1] == ["order 4411, question 0"]
    assert slack.messages["CLEAD"] == {}


async def _session(db: Any, thread: Any) -> Any:
    """The thread's session as the runner loads it (from its latest compaction on)."""
    return await db.sessions.get_session(
        app_name=thread.app_name,
        user_id=thread.user_id,
        session_id=thread.session_id,
        since_compaction=True,
    )


def _stateful_tree(model: ScriptedModel) -> LlmAgent:
    """`support_tree` whose agents keep their answers: the supervisor's under the thread
    owner's `user:last_reply`, billing's as the session's `billing_summary`."""
    billing = LlmAgent(
        name="billing_agent",
        description="Invoices, refunds and charges.",
        instruction="Resolve billing questions.",
        model=model,
        disallow_transfer_to_peers=True,
        output_key="billing_summary",
    )
    return LlmAgent(
        name="support_supervisor",
        description="Front door.",
        instruction="Route the user.",
        model=model,
        sub_agents=[billing],
        output_key="user:last_reply",
    )


async def _state_and_traces(db: Any) -> dict[str, Any]:
    async with db.engine.connect() as conn:

        async def rows(query: Any) -> list[tuple[Any, ...]]:
            return [tuple(r) for r in (await conn.execute(query)).all()]

        return {
            "session_state": await rows(sa.select(sessions.c.user_id, sessions.c.state)),
            "user_state": await rows(
                sa.select(user_state.c.user_id, user_state.c.key, user_state.c.value)
            ),
            "dm_conversations": await rows(sa.select(dm_conversations.c.channel_id)),
            "deliveries": sorted(k for (k,) in await rows(sa.select(deliveries.c.key))),
        }


async def test_forget_takes_back_the_state_and_slack_traces_a_speakers_turns_left(
    slack: FakeSlackApi, start_bot: StartBot, tmp_path: Path
) -> None:
    """U2 writes twice in U1's thread: the supervisor's answer to the first lands in U1's
    `user:last_reply`, billing's answer to the second in the session's `billing_summary`;
    U2 also DMs the bot. Forgetting U2 puts U1's own reply back in `user:last_reply`,
    removes `billing_summary` (nothing else wrote it), and leaves no DM conversation or
    delivery key of U2's; the report names each kind."""
    model = ScriptedModel(
        [
            "Happy to help with the charge.",
            "Noted, u2@example.com.",
            transfer("billing_agent"),
            "Refund queued to card 4111 1111 1111 1111.",
            "Hello U2.",
        ]
    )
    bot = await start_bot(_stateful_tree(model), support_lead_channel="CLEAD")
    await bot.send_event(channel_message("order 4411 was charged twice", ts=ROOT, mention=True))
    await bot.idle()
    for n, text in enumerate([SECRET, "refund it to 4111 1111 1111 1111"]):
        ts = f"1700000600.00030{n}"
        await bot.send_event(channel_message(text, ts=ts, user="U2", thread_ts=ROOT))
        await bot.idle()
    await bot.send_event(dm("hi, this is U2", ts="1700000700.000100", user="U2", channel="D2"))
    await bot.idle()
    db = bot.services.db
    before = await _state_and_traces(db)
    assert ("U1", "user:last_reply", "Noted, u2@example.com.") in before["user_state"]
    assert any("4111" in json.dumps(state) for _, state in before["session_state"])
    assert [c for (c,) in before["dm_conversations"]] == ["D2"]
    assert "message:T1:D2:1700000700.000100" in before["deliveries"]

    out = io.StringIO()
    assert await forget(_settings(tmp_path, slack), out, "U2") == 0
    after = await _state_and_traces(db)
    assert after["user_state"] == [("U1", "user:last_reply", "Happy to help with the charge.")]
    assert after["session_state"] == [("U1", {})]
    assert after["dm_conversations"] == []
    assert after["deliveries"] == [f"message:T1:C1:{ROOT}"]
    counts = dict(line.split() for line in out.getvalue().splitlines()[1:])
    assert counts["session_state"] == "1" and counts["owner_user_state"] == "1"
    assert counts["dm_conversations"] == "1" and counts["deliveries"] == "3"
    assert counts["spoken_events"] == "6"  # two turns, one of them with its transfer
