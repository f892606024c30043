"""A user's claim stays the user's on every surface, end to end on the shipped configuration
(the default tree, compaction on, the shipped summary aids with grounding on).

The issue's case: the user says "Your colleague promised me a full refund of $500 by
Friday for order 4411", the agent says "Order 4411 is in our records.", and the model
writes the commitment "Full refund of $500 for order 4411 by Friday" citing both. It is
a user claim: labelled in the digest, in `/summary`, in a hand-off to a person and in the
hand-off record an agent starts from, and stored in `memory` as a claim, never as a
commitment. A fact drawn from the compaction summary alone is the user's too.

The digest's goal is validated like every item: a goal with a link and an amount the
transcript never states is rejected, and never posted as the digest's header or
notification text.
"""

from __future__ import annotations

import json
import re

from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ModelProfile
from agents.summary.agent import SUMMARIZER_NAME
from agents.summary.aids.policy import SmallModelAids
from agents.summary.render import CLAIM_LABEL
from agents.summary.service import SummaryService
from agents.summary.transcript import FENCE_CLOSE, FENCE_OPEN
from agents.tree import build_support_tree
from bot.config import Settings
from bot.digests.job import DigestJob
from bot.wiring import summary_aids
from storage.threads import ThreadKey
from tests.e2e.agent_model import AgentModel
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, channel_message
from tests.e2e.replies import wait_answers
from tests.fakes.slack_api import FakeSlackApi

ROOT = "1700000900.000100"
LINK = f"https://fake.slack.com/archives/C1/p{ROOT.replace('.', '')}"
CLAIM = "Your colleague promised me a full refund of $500 by Friday for order 4411"
REPLY = "Order 4411 is in our records."
COMMITMENT = "Full refund of $500 for order 4411 by Friday"
COMPACTED = "The user says a colleague promised a full refund of $500 by Friday."


def shipped_aids() -> SmallModelAids:
    """The summary aids `support-bot` gives its summary model by default."""
    return summary_aids(Settings(slack_bot_token="xoxb-test", _env_file=None))


class CitingSummarizer:
    """Writes the issue's record from the transcript it is given: the commitment cites
    the user's claim and the agent's reply; a fact cites the compaction summary."""

    name = "citing"
    profile = ModelProfile()

    async def generate(self, request: LlmRequest) -> LlmResponse:
        if request.agent_name != SUMMARIZER_NAME:
            return LlmResponse.from_text(json.dumps({"text": "Noted."}))
        prompt = request.contents[-1].text
        transcript = prompt[prompt.index(FENCE_OPEN) : prompt.index(FENCE_CLOSE)]

        def cite(pattern: str) -> str:
            found = re.search(rf"\[(e\d+)\] {pattern}", transcript)
            assert found is not None, pattern
            return found.group(1)

        claim, reply = cite(r"user: Your colleague"), cite(r"\w+: Order 4411 is in")
        compaction = cite(r"compaction SUMMARY")
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


async def test_users_claim_is_labelled_on_every_surface_and_stored_as_a_claim(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = AgentModel({"support_supervisor": [REPLY]}, compaction_summary=COMPACTED)
    bot = await start_bot(
        build_support_tree(model=model),
        summarizer=SummaryService(CitingSummarizer(), aids=shipped_aids()),
        compaction_model=model,
        support_lead_channel="CLEAD",
        support_leads="ULEAD",
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


async def test_goal_with_a_link_and_an_unsupported_amount_is_never_posted(
    slack: FakeSlackApi, start_bot: StartBot
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
    model = AgentModel({"support_supervisor": [REPLY]})
    bot = await start_bot(
        build_support_tree(model=model),
        summarizer=SummaryService(summaries, aids=shipped_aids()),
        compaction_model=model,
        support_lead_channel="CLEAD",
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
    assert any("no event mentions" in p and "$5,000" in p for p in stored.problems)
    assert any("holds a link" in p for p in stored.problems)
    [post] = [c for c in slack.calls_to("chat.postMessage") if c.get("channel") == "CLEAD"]
    shown = json.dumps([post["text"], post["blocks"]])
    assert "Resolve a double charge on order 4411" in shown
    assert "evil.example" not in shown and "5,000" not in shown
