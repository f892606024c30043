"""No unreviewed text reaches a customer, and every reply is named after the agent that
owns it, end to end over signed requests and the strict fake Slack, in the shipped
configuration: streaming on, the default tree on a decide-first model (the embedded
model's profile, played by a scripted model that streams its prose slowly enough to be
shown), compaction on and `SUMMARY_MODE=incremental`.

- A billing draft promising a refund, which the review swaps for a reply written after
  `policy_checker` was consulted: Slack never receives the draft.
- A tech question through the `tech_support` pipeline: the diagnosis never reaches
  Slack, and the digest's "Owned by" names `tech_support`, never its steps.
- On a hosted model, a transferred reply's stream starts under the agent that writes
  it: its username and its first words name `billing_agent` from the first chunk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents.models.scripted import ScriptedModel, deltas, json_text, transfer
from agents.tree import build_support_tree
from bot.config import Settings
from bot.models import Models
from bot.slack.streaming import speaker_prefix
from bot.wiring import build_summarizer, window_hooks, work_limit
from storage.threads import ThreadKey
from tests.e2e.agent_model import AgentModel
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, BotHarness, channel_message, dm
from tests.e2e.replies import context_text, shown, wait_answers
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.transcript_summarizer import TranscriptSummarizer

DUPLICATE_CHARGE = (
    "Hi, I was charged twice for my March invoice INV-2291, 49.00 USD each time. Can I get "
    "a refund of the duplicate?"
)
UNCHECKED_PROMISE = "Yes, you will get a refund of the duplicate 49.00 USD charge."
REFUND_QUESTION = "Refund a duplicate 49.00 USD charge on INV-2291?"
POLICY = "DENIED: duplicate charges are refunded only once the bank confirms them."
CHECKED_ANSWER = "Once your bank confirms the duplicate 49.00 USD charge on INV-2291, we refund it."
CRASH = "The app crashes every time I open it."
DIAGNOSIS = "The app's local cache is corrupt after the last update."
FIX = "1. Clear the app's cache. 2. Restart the app."


def all_sent(slack: FakeSlackApi) -> str:
    """Everything the bot sent Slack, every call's arguments, as one string."""
    return json.dumps([c.args for c in slack.calls], ensure_ascii=False)


async def shipped_bot(
    slack: FakeSlackApi,
    start_bot: StartBot,
    database: Any,
    tmp_path: Path,
    model: Any,
    **changed: Any,
) -> BotHarness:
    """The default tree on `model` as `support-bot` runs it: streaming (the default),
    compaction, window records (`SUMMARY_MODE=incremental`, the default) under the
    shared slot count, replies posted under their agent's name; `changed` settings
    (`streaming="off"`, say) apply to the bot's front."""
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        slack_bot_token="xoxb-test",
        slack_api_url=slack.url,
        support_lead_channel="CLEAD",
        model="openai/scripted",
        _env_file=None,
    )
    assert settings.summary_mode == "incremental" and settings.streaming != "off"
    compaction = AgentModel()
    models = Models(
        main=model,
        summary=TranscriptSummarizer(),
        compaction=compaction,
        factory=lambda _: model,
        label="test",
    )
    limit = work_limit(settings)
    return await start_bot(
        build_support_tree(model=model),
        summarizer=build_summarizer(settings, database, models),
        compaction_model=compaction,
        after_invocation=window_hooks(settings, database, models, limit),
        limit=limit,
        support_lead_channel="CLEAD",
        chat_write_customize=True,
        **changed,
    )


async def conversation(bot: BotHarness, channel: str, root: str) -> list[tuple[str, str]]:
    """The thread's stored events as `(author, text)`, a call or result as its name."""
    db = bot.services.db
    record = await db.threads.get(ThreadKey(team_id=TEAM, channel_id=channel, thread_ts=root))
    assert record is not None
    session = await db.sessions.of_thread(record)
    assert session is not None
    turn = []
    for event in session.events:
        for call in event.function_calls:
            turn.append((event.author, f"call {call.name}"))
        for result in event.function_responses:
            turn.append((event.author, f"result {result.name}"))
        if event.text:
            turn.append((event.author, event.text))
    return turn


async def test_a_refund_draft_the_review_swaps_never_reaches_slack(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path
) -> None:
    model = ScriptedModel(
        [
            json_text("billing_agent"),  # the supervisor routes
            json_text("billing_agent"),  # billing_agent decides to answer itself
            UNCHECKED_PROMISE,  # and promises a refund, unchecked
            json_text("yes"),  # the review: the draft promises a refund
            json_text({"request": REFUND_QUESTION}),
            POLICY,  # policy_checker
            json_text("billing_agent"),  # billing_agent answers itself (the supervisor is on offer)
            CHECKED_ANSWER,  # billing_agent again, the policy's answer in view
        ],
        decide_first=True,
        chunk_chars=6,
        chunk_delay=0.1,
    )
    bot = await shipped_bot(slack, start_bot, database, tmp_path, model)
    await bot.send_event(dm(DUPLICATE_CHARGE, ts="1700000701.000100"))
    [answer] = await wait_answers(slack)
    await bot.idle()

    assert await conversation(bot, "D1", "1700000701.000100") == [
        ("user", DUPLICATE_CHARGE),
        ("support_supervisor", "call transfer_to_agent"),
        ("support_supervisor", "result transfer_to_agent"),
        ("billing_agent", "call policy_checker"),
        ("billing_agent", "result policy_checker"),
        ("billing_agent", CHECKED_ANSWER),
    ]
    # Not a word of the draft (nor the policy's own answer) ever reached Slack.
    sent = all_sent(slack)
    assert "you will get a refund" not in sent and "Yes, you will" not in sent
    assert "DENIED" not in sent
    assert shown(answer) == CHECKED_ANSWER
    # Shown once decided, whole, under the agent that wrote it.
    [post] = slack.calls_to("chat.postMessage")
    assert post["username"] == "billing_agent"
    assert post["text"].startswith("billing_agent: ")
    assert "billing_agent" in context_text(answer)
    model.assert_complete()


async def test_pipeline_steps_never_reach_slack_and_never_own_the_thread(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path
) -> None:
    model = ScriptedModel(
        [json_text("tech_support"), DIAGNOSIS, FIX],
        decide_first=True,
        chunk_chars=6,
        chunk_delay=0.1,
    )
    bot = await shipped_bot(slack, start_bot, database, tmp_path, model)
    root = "1700000702.000100"
    slack.add_message("C1", ts=root, text=CRASH, user="U1")
    await bot.send_event(channel_message(CRASH, ts=root, mention=True))
    [answer] = await wait_answers(slack)
    await bot.idle()

    assert await conversation(bot, "C1", root) == [
        ("user", CRASH),
        ("support_supervisor", "call transfer_to_agent"),
        ("support_supervisor", "result transfer_to_agent"),
        ("diagnose", DIAGNOSIS),
        ("fix_writer", FIX),
    ]
    assert "local cache is corrupt" not in all_sent(slack)
    assert shown(answer) == FIX

    [outcome] = await bot.digest_job().run_once()
    assert outcome.outcome == "posted"
    [digest] = [c for c in slack.calls_to("chat.postMessage") if c["channel"] == "CLEAD"]
    owners = [
        el["text"]
        for b in digest["blocks"]
        if b["type"] == "context"
        for el in b["elements"]
        if el["text"].startswith("Owned by")
    ]
    assert len(owners) == 1 and owners[0].startswith("Owned by `tech_support` ·")
    assert "diagnose" not in owners[0] and "fix_writer" not in owners[0]
    model.assert_complete()


async def test_a_transferred_stream_names_its_agent_from_the_first_chunk(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    """A hosted model streams the specialist's reply: the stream starts with that reply,
    under `billing_agent`, never under the agent guessed before the turn."""
    model = ScriptedModel(
        [transfer("billing_agent"), deltas("Your refund ", "is on ", "its way.")],
        chunk_delay=0.3,
    )
    bot = await start_bot(support_tree(model), chat_write_customize=True)
    await bot.send_event(dm("I was charged twice", ts="1700000703.000100"))
    [answer] = await wait_answers(slack)
    await bot.idle()

    [start] = slack.calls_to("chat.startStream")
    assert start["username"] == "billing_agent"
    first = next(c["text"] for c in start["chunks"] if c["type"] == "markdown_text")
    assert first.startswith(speaker_prefix("billing_agent"))
    assert not slack.calls_to("chat.postMessage")  # no placeholder under another name
    assert answer["username"] == "billing_agent"
    assert "billing_agent" in context_text(answer)
