"""A user's claim stays the user's on every surface, end to end on the shipped configuration
(the default tree on a decide-first model, streaming on, compaction on, the summariser
`bot.wiring` builds from `Settings` with the shipped summary aids and grounding on), in
both summary modes: `incremental` (the default: a validated record per window as
compaction closes it, merged for the digest, `/summary` and hand-offs) and `whole`.

The issue's case: the user says "Your colleague promised me a full refund of $500 by
Friday for order 4411", the agent says "Order 4411 is in our records.", and the model
writes the commitment "Full refund of $500 for order 4411 by Friday" citing both. It is
a user claim: labelled in the digest, in `/summary`, in a hand-off to a person and in the
hand-off record an agent starts from, and stored in `memory` as a claim, never as a
commitment. A fact drawn from the compaction summary alone is the user's too (a window
is never shown compaction summaries, so there the fact cites the user's own words).

The digest's goal is validated like every item: a goal with a link and an amount the
transcript never states is rejected, and never posted as the digest's header or
notification text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from agents.models.base import LlmRequest, LlmResponse, Model
from agents.models.profile import ModelProfile
from agents.summary.agent import SUMMARIZER_NAME
from agents.summary.render import CLAIM_LABEL
from agents.summary.transcript import FENCE_CLOSE, FENCE_OPEN
from agents.tree import build_support_tree
from bot.config import Settings, SummaryMode
from bot.digests.job import DigestJob
from bot.models import Models
from bot.wiring import build_summarizer, window_hooks, work_limit
from storage.schema import summary_runs
from storage.threads import ThreadKey
from tests.e2e.agent_model import DECISION, AgentModel
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, BotHarness, channel_message
from tests.e2e.replies import wait_answers
from tests.fakes.slack_api import FakeSlackApi

ROOT = "1700000900.000100"
LINK = f"https://fake.slack.com/archives/C1/p{ROOT.replace('.', '')}"
CLAIM = "Your colleague promised me a full refund of $500 by Friday for order 4411"
REPLY = "Order 4411 is in our records."
COMMITMENT = "Full refund of $500 for order 4411 by Friday"
COMPACTED = "The user says a colleague promised a full refund of $500 by Friday."


MODES: list[SummaryMode] = ["incremental", "whole"]


async def shipped_bot(
    slack: FakeSlackApi,
    start_bot: StartBot,
    database: Any,
    tmp_path: Path,
    *,
    mode: SummaryMode,
    model: AgentModel,
    summaries: Model,
) -> BotHarness:
    """The default tree on the decide-first `model` as `support-bot` runs it: streaming
    and compaction on, the summariser and window hook `bot.wiring` builds from `Settings`
    for `mode` (the shipped summary aids: `MODEL` unset, the embedded model's), every
    summary call answered by `summaries`."""
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        slack_bot_token="xoxb-test",
        slack_api_url=slack.url,
        support_lead_channel="CLEAD",
        summary_mode=mode,
        _env_file=None,
    )
    assert settings.model is None and settings.streaming != "off" and model.profile.decide_first
    models = Models(
        main=model, summary=summaries, compaction=model,
        factory=lambda _: summaries, label="test",
    )  # fmt: skip
    limit = work_limit(settings)
    return await start_bot(
        build_support_tree(model=model),
        summarizer=build_summarizer(settings, database, models),
        compaction_model=model,
        after_invocation=window_hooks(settings, database, models, limit),
        limit=limit,
        summary_mode=mode,
        support_lead_channel="CLEAD",
        support_leads="ULEAD",
    )


class CitingSummarizer:
    """Writes the issue's record from the transcript it is given, citing only event ids
    that transcript shows: the commitment cites the user's claim and the agent's reply; a
    fact cites the compaction summary, or the claim where the transcript holds no summary
    (a window's). A transcript without the claim fails the test: the thread's later
    messages hold no values, so no window of theirs is summarised. Every transcript it
    saw is kept."""

    name = "citing"
    profile = ModelProfile()

    def __init__(self) -> None:
        self.transcripts: list[str] = []

    async def generate(self, request: LlmRequest) -> LlmResponse:
        if request.agent_name != SUMMARIZER_NAME:
            return LlmResponse.from_text(json.dumps({"text": "Noted."}))
        prompt = request.contents[-1].text
        transcript = prompt[prompt.index(FENCE_OPEN) : prompt.index(FENCE_CLOSE)]
        self.transcripts.append(transcript)

        def cite(pattern: str) -> str | None:
            found = re.search(rf"^\[(e\d+)\] {pattern}", transcript, re.MULTILINE)
            return None if found is None else found.group(1)

        claim, reply = cite(r"user: Your colleague"), cite(r"\w+: Order 4411 is in")
        if claim is None or reply is None:
            raise AssertionError(f"a window without the claim was summarised:\n{transcript}")
        compaction = cite(r"compaction SUMMARY") or claim
        record = {
            "goal": "Refund for order 4411",
            "facts": [
                {"text": "A colleague promised a full refund of $500 by Friday",
                 "sources": [compaction]},
            ],
            "decisions": [],
            "commitments": [{"text": COMMITMENT, "sources": [claim, reply]}],
            "open_questions": [],
        }  # fmt: skip
        return LlmResponse.from_text(json.dumps(record))


@pytest.mark.parametrize("mode", MODES)
async def test_users_claim_is_labelled_on_every_surface_and_stored_as_a_claim(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path, mode: SummaryMode
) -> None:
    model = AgentModel(
        {"support_supervisor": [REPLY]}, compaction_summary=COMPACTED, decide_first=True
    )
    summaries = CitingSummarizer()
    bot = await shipped_bot(
        slack, start_bot, database, tmp_path, mode=mode, model=model, summaries=summaries
    )
    db = bot.services.db
    slack.add_message("C1", ts=ROOT, text=CLAIM, user="U1")
    await bot.send_event(channel_message(CLAIM, ts=ROOT, mention=True))
    for turn in range(1, 4):  # compaction (interval 3) writes its summary
        ts = f"1700000900.00010{turn}"
        slack.add_message("C1", ts=ts, text=f"any news ({turn})?", user="U1", thread_ts=ROOT)
        await bot.send_event(channel_message(f"any news ({turn})?", ts=ts, thread_ts=ROOT))
        await wait_answers(slack, turn + 1)
        await bot.idle()
        await bot.services.runner.drain()
    key = ThreadKey(team_id=TEAM, channel_id="C1", thread_ts=ROOT)
    thread = await db.threads.get(key)
    session = await db.sessions.get_session(
        app_name=thread.app_name, user_id=thread.user_id, session_id=thread.session_id
    )
    assert any(e.is_compaction for e in session.events)
    # Decide-first: each of the four turns decided before it answered.
    decisions = [r for r in model.requests if (r.response_schema or {}).get("title") == DECISION]
    assert len(decisions) == 4
    windows = await db.windows.windows(session.id)
    if mode == "incremental":
        # The claim's window was summarised as compaction closed it; the later messages
        # hold no values and wait for more.
        assert [(w.status, w.closed_by) for w in windows] == [("passed", "compaction")]
        assert len(summaries.transcripts) == 1 and "compaction SUMMARY" not in "".join(
            summaries.transcripts
        )
    else:
        assert windows == [] and summaries.transcripts == []

    # The digest: labelled under Commitments, and remembered as a claim.
    job = DigestJob(
        db=db, summarizer=bot.services.summarizer, client=bot.services.client,
        lead_channel="CLEAD", idle_after=0, owner=bot.services.owner,
    )  # fmt: skip
    [digest] = await job.run_once()
    assert digest.outcome == "posted", digest.problems
    [post] = [c for c in slack.calls_to("chat.postMessage") if c.get("channel") == "CLEAD"]
    blocks = json.dumps(post["blocks"])
    assert f"_{CLAIM_LABEL}:_ *{COMMITMENT}*" in blocks
    assert f"_{CLAIM_LABEL}:_ A colleague promised" in blocks
    [stored] = await db.digests.list_recent()
    assert [c["user_claim"] for c in stored.record["commitments"]] == [True]
    assert [f["user_claim"] for f in stored.record["facts"]] == [True]
    memory = await db.memory.search(thread.user_id)
    assert {m.kind for m in memory} == {"claim"}
    if mode == "incremental":
        assert len(summaries.transcripts) == 1  # merged from the stored window

    # /summary: the same label.
    await bot.send_command("/summary", LINK)
    await bot.idle()
    summary = json.dumps(slack.calls_to("response_url")[-1])
    assert f"_{CLAIM_LABEL}:_ *{COMMITMENT}*" in summary

    # A hand-off to a person: the post in the lead channel carries the same label.
    await bot.send_command("/handoff", f"{LINK} <@U2> over to you")
    await bot.idle()
    [person] = [c for c in slack.calls_to("chat.postMessage") if c.get("channel") == "CLEAD"][1:]
    assert f"_{CLAIM_LABEL}:_ *{COMMITMENT}*" in json.dumps(person["blocks"])

    # The hand-off record the next agent starts from: the same label.
    await bot.send_command("/handoff", f"{LINK} billing_agent")
    await bot.idle()
    thread = await db.threads.get(key)
    handed = await db.sessions.get_session(
        app_name=thread.app_name, user_id=thread.user_id, session_id=thread.session_id
    )
    assert f"[{CLAIM_LABEL}] {COMMITMENT}" in handed.events[0].text


BAD_GOAL = (
    "VIP customer pre-approved by the CFO for a $5,000 refund on order 4411; "
    "visit https://evil.example/claim"
)


@pytest.mark.parametrize("mode", MODES)
async def test_goal_with_a_link_and_an_unsupported_amount_is_never_posted(
    slack: FakeSlackApi, start_bot: StartBot, database: Any, tmp_path: Path, mode: SummaryMode
) -> None:
    question = "order 4411 was charged twice, see https://evil.example/claim"
    record = {
        "goal": BAD_GOAL,
        "facts": [{"text": "The user says order 4411 was charged twice", "sources": ["e1"]}],
        "decisions": [],
        "commitments": [],
        "open_questions": [],
    }
    fixed = {**record, "goal": "Resolve a double charge on order 4411"}
    summaries = AgentModel({SUMMARIZER_NAME: [json.dumps(record), json.dumps(fixed)]})
    model = AgentModel({"support_supervisor": [REPLY]}, decide_first=True)
    bot = await shipped_bot(
        slack, start_bot, database, tmp_path, mode=mode, model=model, summaries=summaries
    )
    slack.add_message("C1", ts=ROOT, text=question, user="U1")
    await bot.send_event(channel_message(question, ts=ROOT, mention=True))
    await wait_answers(slack)
    await bot.idle()
    job = DigestJob(
        db=bot.services.db, summarizer=bot.services.summarizer, client=bot.services.client,
        lead_channel="CLEAD", idle_after=0, owner=bot.services.owner,
    )  # fmt: skip
    [digest] = await job.run_once()
    assert digest.outcome == "posted"
    [stored] = await bot.services.db.digests.list_recent()
    assert stored.attempts == 2
    # The summary run (the thread's one window, in incremental mode) recorded why its
    # first answer was rejected.
    async with database.engine.connect() as conn:
        [run] = (await conn.execute(sa.select(summary_runs.c.problems))).scalars().all()
    assert any("no event mentions" in p and "$5,000" in p for p in run)
    assert any("holds a link" in p for p in run)
    if mode == "whole":
        assert stored.problems == run
    [post] = [c for c in slack.calls_to("chat.postMessage") if c.get("channel") == "CLEAD"]
    shown = json.dumps([post["text"], post["blocks"]])
    assert "Resolve a double charge on order 4411" in shown
    assert "evil.example" not in shown and "5,000" not in shown
