"""Renderings: plain text and JSON, both from the record (Block Kit: tests/bot/slack)."""

from __future__ import annotations

import json

from agents.knowledge.thread_sources import ThreadSources
from agents.summary.checks.claims import label_user_claims
from agents.summary.record import HandoffRecord
from agents.summary.render import CLAIM_LABEL, to_json, to_json_text, to_text
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


def test_render_json_round_trips_with_labels() -> None:
    data = to_json(RECORD)
    assert data["open_questions"][0]["user_claim"] is True
    assert data["facts"][0]["user_claim"] is False
    assert HandoffRecord.model_validate(json.loads(to_json_text(RECORD))) == RECORD


def test_render_text_lists_the_documentation_the_replies_cited_after_the_record() -> None:
    cited = ThreadSources(
        shown=(
            {"id": "refunds#dup", "title": "Refund policy", "heading": "Duplicate charges",
             "url": "https://help.example.com/refunds"},
        ),
        more=1,
    )  # fmt: skip
    lines = to_text(RECORD, sources=cited).splitlines()
    at = lines.index("Documentation the replies cited:")
    assert lines[at + 1 :] == [
        "- Refund policy › Duplicate charges <https://help.example.com/refunds>",
        "- and 1 more",
    ]
    assert lines.index("Open questions:") < at
    assert "Documentation" not in to_text(RECORD)
