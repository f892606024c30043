"""Renderings: plain text, Block Kit and JSON, all from the record."""

from __future__ import annotations

import json

from agents.events import Event
from agents.summary.record import HandoffRecord
from agents.summary.render import CLAIM_LABEL, to_blocks, to_json, to_json_text, to_text
from agents.summary.validator import label_user_claims
from bot.evals.dataset import numbered
from tests.agents.summary.conftest import item, refund_events, refund_record

EVENTS = numbered(refund_events())
RECORD = label_user_claims(
    HandoffRecord.model_validate(
        refund_record(open_questions=[item("Is order B-2040 affected too?", "e8")])
    ),
    EVENTS,
)


def test_render_text_marks_claims_in_handoff_order() -> None:
    text = to_text(RECORD, source_session_id="s1")
    lines = text.splitlines()
    assert lines[0] == "Handoff summary of session s1"
    headings = [line for line in lines if line.endswith(":")]
    assert headings == ["Facts:", "Decisions:", "Commitments:", "Open questions:"]
    assert f"- [{CLAIM_LABEL}] Is order B-2040 affected too? (e8)" in lines


def test_render_blocks_link_sources_with_slack_ts() -> None:
    def link_for(event: Event) -> str | None:
        ts = event.custom_metadata.get("slack_ts")
        return f"https://x.slack.com/p{ts}" if ts else None

    blocks = to_blocks(RECORD, events=EVENTS, link_for=link_for)
    body = "\n".join(b["text"]["text"] for b in blocks if b["type"] == "section")
    assert "<https://x.slack.com/p1.3|e7>" in body  # the agent's reply has a slack_ts
    assert "(e5, e6)" in body  # tool events have none: plain ids
    assert "*Refund of $12.50 arrives within five working days*" in body
    assert f"_{CLAIM_LABEL}:_ Is order B-2040" in body
    assert blocks[-1]["type"] == "context"


def test_render_json_round_trips_with_labels() -> None:
    data = to_json(RECORD)
    assert data["open_questions"][0]["user_claim"] is True
    assert data["facts"][0]["user_claim"] is False
    assert HandoffRecord.model_validate(json.loads(to_json_text(RECORD))) == RECORD
