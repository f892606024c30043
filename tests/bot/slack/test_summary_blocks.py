"""Block Kit for summaries and digests: built under bot/slack/render/ from the record."""

from __future__ import annotations

from agents.events import Event
from agents.summary.checks.claims import label_user_claims
from agents.summary.record import HandoffRecord
from agents.summary.render import CLAIM_LABEL
from agents.summary.results import WindowGap
from bot.evals.dataset import numbered
from bot.slack.message_ts import message_ts
from bot.slack.permalinks import ThreadLinks
from bot.slack.render.digest_blocks import digest_message, unavailable_message
from bot.slack.render.summary_blocks import record_blocks, summary_blocks
from tests.agents.summary.conftest import item, refund_events, refund_record

EVENTS = numbered(refund_events())
RECORD = label_user_claims(
    HandoffRecord.model_validate(
        refund_record(open_questions=[item("Is order B-2040 affected too?", "e8")])
    ),
    EVENTS,
)
LINKS = ThreadLinks(
    channel="C1", thread_ts="1.1", thread_link="https://x.slack.com/archives/C1/p11"
)


def test_render_blocks_link_sources_with_slack_ts() -> None:
    def link_for(event: Event) -> str | None:
        ts = message_ts(event)
        return f"https://x.slack.com/p{ts}" if ts else None

    blocks = record_blocks(RECORD, events=EVENTS, link_for=link_for)
    body = "\n".join(b["text"]["text"] for b in blocks if b["type"] == "section")
    assert "<https://x.slack.com/p1.3|e7>" in body  # the agent's reply has a slack_ts
    assert "(e5, e6)" in body  # tool events have none: plain ids
    assert "*Refund of $12.50 arrives within five working days*" in body
    assert f"_{CLAIM_LABEL}:_ Is order B-2040" in body
    assert blocks[-1]["type"] == "context"


def test_summary_blocks_end_with_a_link_to_the_thread() -> None:
    blocks = summary_blocks(RECORD, events=EVENTS, links=LINKS)
    assert blocks[0]["text"]["text"] == "Thread summary"
    assert blocks[-1]["elements"][0]["text"] == (
        "Validated summary of <https://x.slack.com/archives/C1/p11|this thread>"
    )
    assert summary_blocks(RECORD, events=EVENTS, links=None)[-1]["type"] == "context"


def test_digest_message_names_owners_cost_and_what_the_update_changed() -> None:
    text, blocks = digest_message(
        RECORD,
        events=EVENTS,
        links=LINKS,
        owners=["billing_agent"],
        cost=0.0123,
        attempts=2,
        update_note="Updated after 2 new messages in the thread: goal changed.",
    )
    # The fallback (the notification) names the digest and goal; the blocks carry the link.
    assert text.startswith("Updated handoff digest: ")
    assert "https://x.slack.com/archives/C1/p11" in blocks[0]["text"]["text"]
    assert blocks[1]["elements"][0]["text"] == (
        "Updated after 2 new messages in the thread: goal changed."
    )
    assert blocks[-1]["elements"][0]["text"] == (
        "Owned by `billing_agent` · summary cost $0.0123 · 2 attempt(s), validated"
    )


def test_unavailable_message_lists_problems_never_text() -> None:
    problems = [f"problem <{i}>" for i in range(12)]
    text, blocks = unavailable_message(LINKS, problems)
    body = blocks[0]["text"]["text"]
    assert text == "Summary unavailable for a thread in <#C1>"
    assert "• problem &lt;0&gt;" in body and "…and 2 more" in body


def test_a_record_with_gaps_says_partial_where_a_whole_one_says_validated() -> None:
    gaps = [WindowGap("e9", "e12", ("fact 1 cites e9, which does not mention B-2040",))]
    _, blocks = digest_message(
        RECORD,
        events=EVENTS,
        links=LINKS,
        owners=["billing_agent"],
        cost=0.0123,
        attempts=5,
        gaps=gaps,
        windows=3,
    )
    assert blocks[-1]["elements"][0]["text"] == (
        "Owned by `billing_agent` · summary cost $0.0123 · 5 attempt(s), partial: 2 of 3 windows"
    )
    shown = summary_blocks(RECORD, events=EVENTS, links=LINKS, gaps=gaps, windows=3)
    assert shown[-1]["elements"][0]["text"] == (
        "Summary of <https://x.slack.com/archives/C1/p11|this thread>, partial: 2 of 3 windows"
    )
