"""Answers from the team's own documents, end to end over Slack HTTP on the shipped
configuration: the default tree on a decide-first model (the embedded profile, played by
a scripted model), streaming on, the knowledge folder synced into a real SQLite file (or
a PostgreSQL database shared with another process) the way `support-bot` syncs it.

A grounded reply carries a sources line; a template placeholder never reaches Slack, and
the section quoted under the answer keeps its own paragraph; an invented amount is caught
and the reply written again before anything is posted; a question the documents do not
cover gets the honest answer, also when its words find sections that the model says do
not answer it; a supervisor's invented value (it declares no `knowledge:`) is checked
against the index too; an edited document re-synced while the bot runs is what the next
answer cites; a follow-up in the thread is searched with the question before it."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import sys
from pathlib import Path

from agents.knowledge.reply_check import CHECK_KEY, NOT_FOUND_TEXT, SOURCES_KEY
from agents.models.scripted import ScriptedModel, json_text
from agents.tree import build_support_tree
from bot.config import Settings
from bot.knowledge import SAMPLE_DIR
from bot.ops import knowledge
from storage import Database
from storage.threads import ThreadKey
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, BotHarness, channel_message
from tests.e2e.replies import context_text, shown, wait_answers
from tests.fakes.slack_api import FakeSlackApi

DUPLICATE_CHARGE = (
    "I was charged twice for my March invoice INV-2291, 49.00 USD each time. Can I get a "
    "refund of the duplicate?"
)
GROUNDED = (
    "The duplicate 49.00 USD charge on INV-2291 is refunded in full to your original "
    "payment method within 5 to 10 business days."
)
INVENTED = "I have refunded 98.00 USD, which you will see within 3 business days."
CITATION = "<https://help.example.com/policies/refunds|Refund policy (sample) › Duplicate charges>"


def _billing(*steps: str, covered: str | None = "yes") -> list[str]:
    """The supervisor routes to billing_agent, which answers itself (`steps[0]`), is not
    held back for the policy check, and whose sections the coverage check says answer
    the question (`covered`; None: not asked, when no section is relevant), then plays the
    rest of `steps`."""
    return [
        json_text("billing_agent"),
        json_text("billing_agent"),
        steps[0],
        json_text("no"),
        *([json_text(covered)] if covered is not None else []),
        *steps[1:],
    ]


async def _knowledge_folder(tmp_path: Path, db: Database) -> Path:
    """A copy of the shipped sample, synced as the bot syncs `KNOWLEDGE_DIR` at start."""
    folder = tmp_path / "knowledge"
    shutil.copytree(SAMPLE_DIR, folder)
    await knowledge.sync_folder(db, folder)
    return folder


async def _ask(bot: BotHarness, slack: FakeSlackApi, text: str, ts: str, n: int) -> dict:
    await bot.send_event(channel_message(text, ts=ts, mention=True))
    await wait_answers(slack, n)
    await bot.idle()
    return (await wait_answers(slack, n))[-1]


async def _stored_reply(db: Database, root: str, author: str = "billing_agent") -> dict:
    thread = await db.threads.get(ThreadKey(team_id=TEAM, channel_id="C1", thread_ts=root))
    assert thread is not None
    session = await db.sessions.of_thread(thread)
    assert session is not None
    [reply] = [e for e in session.events if e.author == author and e.text]
    return dict(reply.custom_metadata)


def _posted(slack: FakeSlackApi) -> str:
    return json.dumps([c.args for c in slack.calls])


async def test_knowledge_cited_reply_shows_its_sources_line(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> None:
    await _knowledge_folder(tmp_path, database)
    model = ScriptedModel(_billing(GROUNDED), decide_first=True)
    bot = await start_bot(build_support_tree(model=model, knowledge=database.knowledge))
    reply = await _ask(bot, slack, DUPLICATE_CHARGE, "1700001000.000100", 1)
    assert GROUNDED in shown(reply)
    line = context_text(reply)
    assert line.endswith(
        "*Sources:* <https://help.example.com/billing|Billing FAQ (sample) › I was charged "
        f"twice>  ·  {CITATION}"
    )
    stored = await _stored_reply(database, "1700001000.000100")
    assert stored[CHECK_KEY] == "supported"
    assert "policies/refund-policy#duplicate-charges" in {s["id"] for s in stored[SOURCES_KEY]}
    # Counted on /metrics and in `support-bot stats`.
    assert bot.http is not None
    async with bot.http.get(f"{bot.url}/metrics") as response:
        page = await response.text()
    assert 'support_bot_knowledge_checks_total{agent="billing_agent",outcome="supported"}' in page
    assert (await database.stats.collect()).knowledge_checks == {"supported": 1}
    model.assert_complete()


async def test_knowledge_placeholder_never_reaches_slack_and_the_quote_keeps_its_line(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> None:
    # The embedded model once told a customer to write to "[support email address]"; and a
    # reply cut down ran the policy quoted under it into its last sentence.
    await _knowledge_folder(tmp_path, database)
    blank = f"{GROUNDED}\n\nWrite to us at [billing email address] if it has not arrived."
    model = ScriptedModel(
        [
            json_text("billing_agent"),
            json_text("billing_agent"),
            blank,  # asked again, with the placeholder named
            GROUNDED,
            json_text("no"),  # the review: no refund promised to check
            json_text("yes"),  # the coverage check
        ],
        decide_first=True,
    )
    bot = await start_bot(build_support_tree(model=model, knowledge=database.knowledge))
    reply = await _ask(bot, slack, DUPLICATE_CHARGE, "1700001050.000100", 1)
    assert "billing email address" not in _posted(slack)
    assert "[billing email address] is a placeholder" in model.requests[3].contents[-1].text
    text = shown(reply)
    assert text.startswith(GROUNDED)
    # The section quoted under the answer starts its own paragraph, a Slack quote.
    assert f"{GROUNDED}\n\n&gt; " in text
    assert (await _stored_reply(database, "1700001050.000100"))[CHECK_KEY] == "supported"
    model.assert_complete()


async def test_knowledge_invented_amount_is_caught_and_rewritten(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> None:
    await _knowledge_folder(tmp_path, database)
    model = ScriptedModel(_billing(INVENTED, GROUNDED), decide_first=True)
    bot = await start_bot(build_support_tree(model=model, knowledge=database.knowledge))
    reply = await _ask(bot, slack, DUPLICATE_CHARGE, "1700001100.000100", 1)
    assert GROUNDED in shown(reply)
    # The invented reply never reached Slack, streamed or posted.
    assert "98.00" not in _posted(slack)
    assert "amount '98.00 USD'" in model.requests[-1].contents[-1].text
    assert (await _stored_reply(database, "1700001100.000100"))[CHECK_KEY] == "rewritten"
    model.assert_complete()


async def test_knowledge_uncovered_question_is_answered_honestly(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> None:
    await _knowledge_folder(tmp_path, database)
    invention = "Yes, we accept bitcoin, with a 5% discount."
    model = ScriptedModel(_billing(invention, covered=None), decide_first=True)
    bot = await start_bot(build_support_tree(model=model, knowledge=database.knowledge))
    question = "Can I pay my invoices with cryptocurrency like bitcoin?"
    reply = await _ask(bot, slack, question, "1700001200.000100", 1)
    assert NOT_FOUND_TEXT in shown(reply)
    assert "bitcoin, with" not in _posted(slack)
    assert "Sources" not in context_text(reply)
    stored = await _stored_reply(database, "1700001200.000100")
    assert stored[CHECK_KEY] == "not_found" and stored[SOURCES_KEY] == []
    model.assert_complete()


async def test_knowledge_question_its_sections_do_not_answer_is_answered_honestly(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> None:
    """The duplicate-charge sections share most of the question's words, so they are
    retrieved as relevant; the model, asked whether they answer it, says no. The draft
    (which states only what they say) never reaches Slack."""
    await _knowledge_folder(tmp_path, database)
    draft = "A duplicate charge is refunded in full to your original payment method."
    model = ScriptedModel(_billing(draft, covered="no"), decide_first=True)
    bot = await start_bot(build_support_tree(model=model, knowledge=database.knowledge))
    question = "Is a duplicate charge refunded with interest?"
    reply = await _ask(bot, slack, question, "1700001250.000100", 1)
    assert NOT_FOUND_TEXT in shown(reply)
    assert "original payment method" not in _posted(slack)
    assert "Sources" not in context_text(reply)
    stored = await _stored_reply(database, "1700001250.000100")
    assert stored[CHECK_KEY] == "not_found" and stored[SOURCES_KEY] == []
    assert "Duplicate charges" in model.requests[-1].system_instruction
    model.assert_complete()


async def test_knowledge_supervisor_invented_value_never_reaches_slack(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> None:
    """The supervisor has no `knowledge:` of its own; its reply's values are checked
    against the index all the same, and an invented delivery time is written again."""
    await _knowledge_folder(tmp_path, database)
    invented = "Your parcel will arrive within 3 business days."
    honest = "I'm sorry it is late. I can put you in touch with a person who can trace it."
    model = ScriptedModel(
        [json_text("support_supervisor"), invented, json_text("no"), honest], decide_first=True
    )
    bot = await start_bot(build_support_tree(model=model, knowledge=database.knowledge))
    question = "My parcel was supposed to come yesterday, where is it?"
    reply = await _ask(bot, slack, question, "1700001300.000100", 1)
    assert honest in shown(reply)
    assert "3 business days" not in _posted(slack)
    thread = await database.threads.get(
        ThreadKey(team_id=TEAM, channel_id="C1", thread_ts="1700001300.000100")
    )
    assert thread is not None
    session = await database.sessions.of_thread(thread)
    assert session is not None
    [stored] = [e for e in session.events if e.author == "support_supervisor" and e.text]
    assert stored.custom_metadata[CHECK_KEY] == "rewritten"
    model.assert_complete()


async def test_knowledge_supervisor_definition_from_nothing_never_reaches_slack(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> None:
    """A question the documentation has nothing on, which the supervisor keeps and answers
    from the model's own knowledge with no value to check: written again once with that
    named, and a second answer from nothing is the honest one too."""
    await _knowledge_folder(tmp_path, database)
    invented = "Sure! A loyalty voucher ID is the unique code printed on each voucher."
    model = ScriptedModel(
        [json_text("support_supervisor"), invented, json_text("no"), "It is the voucher code."],
        decide_first=True,
    )
    bot = await start_bot(build_support_tree(model=model, knowledge=database.knowledge))
    question = "Hello there. Can you please tell me what a loyalty voucher ID is?"
    reply = await _ask(bot, slack, question, "1700001350.000100", 1)
    assert NOT_FOUND_TEXT in shown(reply)
    assert "unique code" not in _posted(slack) and "voucher code" not in _posted(slack)
    stored = await _stored_reply(database, "1700001350.000100", "support_supervisor")
    assert stored[CHECK_KEY] == "not_found" and stored[SOURCES_KEY] == []
    model.assert_complete()


async def test_knowledge_document_edited_and_resynced_while_the_bot_runs(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> None:
    folder = await _knowledge_folder(tmp_path, database)
    question = "How many days after the charge can a monthly plan be refunded?"
    new_window = "A monthly plan can be refunded within 21 days of the charge."
    model = ScriptedModel(
        [*_billing("A monthly plan can be refunded within 14 days of the charge."),
         *_billing(new_window)],
        decide_first=True,
    )  # fmt: skip
    bot = await start_bot(build_support_tree(model=model, knowledge=database.knowledge))
    first = await _ask(bot, slack, question, "1700001300.000100", 1)
    assert "14 days" in shown(first)

    policy = folder / "policies" / "refund-policy.md"
    policy.write_text(
        policy.read_text().replace("within 14 days of the charge", "within 21 days of the charge")
    )
    # `support-bot knowledge sync`, on its own connection to the bot's database file.
    out = io.StringIO()
    settings = Settings(_env_file=None, database_url=database.url.render_as_string(False))
    assert await knowledge.sync(settings, out, folder) == 0
    assert "1 updated" in out.getvalue()

    second = await _ask(bot, slack, question, "1700001400.000100", 2)
    # Before the sync, "21 days" was in no section: the check would have refused it.
    assert new_window in shown(second)
    answered = [r for r in model.requests if r.agent_name == "billing_agent"][-2]
    assert "within 21 days of the charge" in answered.system_instruction
    assert "within 14 days" not in answered.system_instruction
    stored = await _stored_reply(database, "1700001400.000100")
    assert stored[CHECK_KEY] == "supported"
    assert "policies/refund-policy#refund-window" in {s["id"] for s in stored[SOURCES_KEY]}
    model.assert_complete()


async def test_knowledge_postgres_index_is_shared_by_two_processes(
    slack: FakeSlackApi, postgres_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "knowledge"
    shutil.copytree(SAMPLE_DIR, folder)
    # Another process (`support-bot knowledge sync`) indexes the folder into PostgreSQL.
    command = Path(sys.executable).with_name("support-bot")
    env = {**os.environ, "DATABASE_URL": postgres_url}
    sync = await asyncio.create_subprocess_exec(
        str(command), "knowledge", "sync", "--dir", str(folder),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await sync.communicate()
    assert sync.returncode == 0, err.decode()
    assert "4 added" in out.decode()

    db = await Database.open(postgres_url)
    model = ScriptedModel(_billing(GROUNDED), decide_first=True)
    bot = await BotHarness.start(
        slack, agent=build_support_tree(model=model, knowledge=db.knowledge), db=db
    )
    try:
        reply = await _ask(bot, slack, DUPLICATE_CHARGE, "1700001500.000100", 1)
        assert GROUNDED in shown(reply)
        assert CITATION in context_text(reply)
        stored = await _stored_reply(db, "1700001500.000100")
        assert stored[CHECK_KEY] == "supported"
    finally:
        await bot.stop()
        await db.close()
    model.assert_complete()


async def test_knowledge_follow_up_in_the_thread_is_answered_from_the_section_it_needs(
    slack: FakeSlackApi, start_bot: StartBot, database: Database, tmp_path: Path
) -> None:
    # "And if I downgrade later?" alone finds nothing relevant; the thread's earlier
    # question, read with it, finds the section on changing plans.
    await _knowledge_folder(tmp_path, database)
    upgraded = "An upgrade takes effect at once and is charged pro rata for the rest of the period."
    downgraded = "A downgrade takes effect at the start of the next billing period."
    model = ScriptedModel(
        [*_billing(upgraded),
         json_text("billing_agent"), downgraded, json_text("no"), json_text("yes")],
        decide_first=True,
    )  # fmt: skip
    bot = await start_bot(build_support_tree(model=model, knowledge=database.knowledge))
    root = "1700001500.000100"
    question = "If I upgrade my plan in the middle of the month, how am I charged?"
    await _ask(bot, slack, question, root, 1)
    follow_up = channel_message("And if I downgrade later?", ts="1700001500.000200", thread_ts=root)
    await bot.send_event(follow_up)
    await wait_answers(slack, 2)
    await bot.idle()
    second = (await wait_answers(slack, 2))[-1]
    assert downgraded in shown(second)
    assert "Billing FAQ (sample) › Changing plans" in context_text(second)
    thread = await database.threads.get(ThreadKey(team_id=TEAM, channel_id="C1", thread_ts=root))
    assert thread is not None
    session = await database.sessions.of_thread(thread)
    assert session is not None
    last = [e for e in session.events if e.author == "billing_agent" and e.text][-1]
    assert last.custom_metadata[CHECK_KEY] == "supported"
    model.assert_complete()
