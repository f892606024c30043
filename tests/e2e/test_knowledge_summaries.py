"""The documentation a thread's replies cited, shown wherever the thread is summarised,
end to end over Slack HTTP on the shipped configuration: the default tree on a
decide-first model (the embedded profile, played by a scripted model) answering from the
shipped sample knowledge base, streaming on, incremental summaries (`bot.wiring`'s
summariser and window hook), compaction on.

A grounded billing reply cites the refund policy; the idle digest in the lead channel,
`/summary`, a hand-off to a person and a hand-off to an agent then list that source with
its link. The list is read from the reply events, never from the summary model (whose
records here name no document). `forget` removes it with the events."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agents.knowledge.reply_check import SOURCES_KEY
from agents.models.scripted import ScriptedModel, json_text
from agents.tree import build_support_tree
from bot.config import Settings
from bot.knowledge import SAMPLE_DIR
from bot.models import Models
from bot.ops import knowledge
from bot.ops.commands import forget
from bot.wiring import build_summarizer, window_hooks, work_limit
from storage import Database
from storage.schema import digests, events, summary_windows
from storage.threads import ThreadKey
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, BotHarness, channel_message
from tests.e2e.replies import answer_of, context_text, wait_answers
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.transcript_summarizer import TranscriptSummarizer

ROOT = "1700003000.000100"
LINK = f"https://fake.slack.com/archives/C1/p{ROOT.replace('.', '')}"
QUESTION = (
    "I was charged twice for my March invoice INV-2291, 49.00 USD each time. Can I get a "
    "refund of the duplicate?"
)
GROUNDED = (
    "The duplicate 49.00 USD charge on INV-2291 is refunded in full to your original "
    "payment method within 5 to 10 business days."
)
FAQ = "<https://help.example.com/billing|Billing FAQ (sample) › I was charged twice>"
POLICY = "<https://help.example.com/policies/refunds|Refund policy (sample) › Duplicate charges>"
CITED_LINE = f"*Documentation the replies cited:* {FAQ}  ·  {POLICY}"
CITED_TEXT = (
    "Documentation the replies cited:\n"
    "- Billing FAQ (sample) › I was charged twice <https://help.example.com/billing>\n"
    "- Refund policy (sample) › Duplicate charges <https://help.example.com/policies/refunds>"
)


def _settings(tmp_path: Path, slack: FakeSlackApi) -> Settings:
    return Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        slack_bot_token="xoxb-test",
        slack_api_url=slack.url,
        support_lead_channel="CLEAD",
        # A hosted summary model: no completion pass, so the transcript summariser answers
        # alone. The tree's own model is the scripted decide-first one below.
        model="openai/scripted",
        _env_file=None,
    )


async def _grounded_thread(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> tuple[BotHarness, TranscriptSummarizer]:
    """The sample synced as the bot syncs it at start, then one grounded billing reply:
    the supervisor routes, billing_agent answers from the prefetched sections, and is not
    held back for the policy check, and its sections answer the question (the coverage
    check)."""
    folder = tmp_path / "knowledge"
    shutil.copytree(SAMPLE_DIR, folder)
    await knowledge.sync_folder(database, folder)
    settings = _settings(tmp_path, slack)
    model = ScriptedModel(
        [
            json_text("billing_agent"),
            json_text("billing_agent"),
            GROUNDED,
            json_text("no"),
            json_text("yes"),
        ],
        decide_first=True,
    )
    summaries = TranscriptSummarizer()
    models = Models(
        main=model, summary=summaries, compaction=summaries,
        factory=lambda _: summaries, label="test",
    )  # fmt: skip
    limit = work_limit(settings)
    bot = await start_bot(
        build_support_tree(model=model, knowledge=database.knowledge),
        summarizer=build_summarizer(settings, database, models),
        compaction_model=summaries,
        after_invocation=window_hooks(settings, database, models, limit),
        limit=limit,
        support_lead_channel="CLEAD",
        support_leads="ULEAD",
    )
    slack.add_message("C1", ts=ROOT, text=QUESTION, user="U1")
    await bot.send_event(channel_message(QUESTION, ts=ROOT, mention=True))
    [reply] = await wait_answers(slack)
    await bot.idle()
    # A small model's answer, with the best section's own sentences quoted under it.
    answer, quote = answer_of(reply).split("\n\n&gt; ")
    assert answer == GROUNDED
    assert quote.startswith("A second charge for the same invoice number is a duplicate charge,")
    assert context_text(reply).endswith(f"*Sources:* {FAQ}  ·  {POLICY}")
    model.assert_complete()
    return bot, summaries


def _cited_lines(message: dict[str, Any]) -> list[str]:
    return [line for line in _context_lines(message) if "replies cited" in line]


def _context_lines(message: dict[str, Any]) -> list[str]:
    return [
        el["text"]
        for b in message.get("blocks") or []
        if b["type"] == "context"
        for el in b["elements"]
    ]


async def test_knowledge_sources_show_in_the_digest_summary_and_person_handoff(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> None:
    bot, summaries = await _grounded_thread(slack, start_bot, database, tmp_path)
    # The idle digest in the support-lead channel.
    [outcome] = await bot.digest_job().run_once()
    assert outcome.outcome == "posted", outcome.problems
    [digest] = slack.messages["CLEAD"].values()
    assert _cited_lines(digest) == [CITED_LINE]
    # The summary model was shown no document and named none: the line is the events'.
    assert summaries.transcripts and "help.example.com" not in "".join(summaries.transcripts)

    # /summary, answered to the asker alone.
    await bot.send_command("/summary", LINK)
    await bot.idle()
    [summary] = slack.calls_to("response_url")
    assert summary["text"].startswith("Thread summary:")
    assert _cited_lines(summary) == [CITED_LINE]

    # A hand-off to a person: in the thread and in the lead channel.
    await bot.send_command("/handoff", f"{LINK} <@U2|bob> please call them")
    await bot.idle()
    notices = [
        p for p in slack.calls_to("chat.postMessage") if "handed this thread off" in p["text"]
    ]
    assert sorted(p["channel"] for p in notices) == ["C1", "CLEAD"]
    assert [_cited_lines(p) for p in notices] == [[CITED_LINE], [CITED_LINE]]


async def test_knowledge_sources_seed_the_session_of_an_agent_handoff_and_forget_removes_them(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> None:
    bot, _ = await _grounded_thread(slack, start_bot, database, tmp_path)
    [outcome] = await bot.digest_job().run_once()
    assert outcome.outcome == "posted", outcome.problems
    key = ThreadKey(team_id=TEAM, channel_id="C1", thread_ts=ROOT)
    await bot.send_command("/handoff", f"{LINK} billing_agent")
    await bot.idle()
    thread = await database.threads.get(key)
    assert thread is not None and thread.owner_agent == "billing_agent"
    session = await database.sessions.of_thread(thread)
    assert session is not None
    [record] = session.events
    assert CITED_TEXT in record.text

    stored = await _stored_text(database)
    assert "policies/refund-policy#duplicate-charges" in stored
    assert "help.example.com/policies/refunds" in stored
    out = io.StringIO()
    assert await forget(_settings(tmp_path, slack), out, "U1") == 0
    stored = await _stored_text(database)
    assert "policies/refund-policy#duplicate-charges" not in stored
    assert "help.example.com" not in stored
    assert SOURCES_KEY not in stored
    assert "Deleted 1 posted digest messages from Slack" in out.getvalue()
    assert slack.messages["CLEAD"] == {}
    # The thread was U1's: it went, with the session its hand-off record started.
    assert await database.threads.get(key) is None
    assert await database.sessions.of_thread(thread) is None


async def _stored_text(db: Database) -> str:
    """Every stored event (with its metadata), digest record and window record."""
    async with db.engine.connect() as conn:
        rows = (await conn.execute(sa.select(events.c.data, events.c.custom_metadata))).all()
        kept = (await conn.execute(sa.select(digests.c.record))).all()
        windows = (await conn.execute(sa.select(summary_windows))).all()
    return json.dumps(
        [list(map(str, r)) for r in rows] + [str(r[0]) for r in kept] + [str(w) for w in windows]
    )
