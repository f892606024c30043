"""A hand-off to an agent from a partial record carries every word the record does not:
the raw events of each gap window and of the unsummarised open tail, fenced, masked and
pointed back to, after the merged record. One without a summary lists the documentation
the thread's replies cited after the raw thread, which does not show it."""

from __future__ import annotations

from agents.events import Event, Part
from agents.knowledge.reply_check import CHECK_KEY, SOURCES_KEY
from agents.sessions.session import Session
from agents.summary.results import Summary
from agents.summary.transcript import FENCE_CLOSE, FENCE_OPEN
from bot.threads.handoff import handoff_text
from bot.threads.summaries import ThreadSummary, summarize_session
from tests.agents.summary.conftest import item
from tests.agents.summary.test_incremental import answer, live

LATEST = "Actually I'd rather have a replacement than wait."


async def test_an_agent_hand_off_from_a_partial_record_carries_the_gap_and_the_open_tail() -> None:
    summarizer, session, _, _ = await live(
        [
            ("Order A-1001 is late.", "It ships tomorrow."),
            ("And C-3003? My PIN is 4821 if you need it.", "C-3003 shipped on Monday."),
            (LATEST, "Okay."),
        ],
        [
            answer("Track orders", facts=[item("Order A-1001 ships tomorrow", "e2")]),
            answer("Track orders"),  # drops C-3003: the window is a gap
            answer("Track orders"),
        ],
    )
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary) and len(result.gaps) == 1
    assert result.unsummarised is not None
    view = await summarize_session(summarizer, session, surface="handoff")
    text = handoff_text(view, thread_link="https://x/p1", note="")
    assert text.startswith(f"Handed off from session {session.id} (thread https://x/p1).")
    record_at = text.index("Order A-1001 ships tomorrow")
    gap_at = text.index("Window e3–e4, not summarised:")
    tail_at = text.index("The latest messages, e5–e6, not summarised:")
    assert record_at < gap_at < tail_at
    assert "C-3003 shipped on Monday." in text[gap_at:tail_at]
    assert LATEST in text[tail_at:]
    assert text.count(FENCE_OPEN) == 2 and text.count(FENCE_CLOSE) == 2
    assert "4821" not in text  # masked over the whole thread


def test_an_agent_hand_off_without_a_summary_lists_the_documentation_the_replies_cited() -> None:
    cited = {"id": "refunds#dup", "title": "Refund policy", "heading": "Duplicate charges",
             "url": "https://help.example.com/refunds"}  # fmt: skip
    reply = Event(
        id="e2",
        author="billing_agent",
        parts=(Part(text="The duplicate charge is refunded in full."),),
        custom_metadata={SOURCES_KEY: [cited], CHECK_KEY: "supported"},
    )
    session = Session(
        id="s1", app_name="a", user_id="U1",
        events=[Event(id="e1", author="user", parts=(Part(text="Charged twice."),)), reply],
    )  # fmt: skip
    view = ThreadSummary(session=session, record=None, plain="No validated summary.")
    text = handoff_text(view, thread_link=None, note="")
    # The raw thread shows the reply, not what it cited: the list follows it.
    assert text.index("refunded in full") < text.index(
        "Documentation the replies cited:\n"
        "- Refund policy › Duplicate charges <https://help.example.com/refunds>"
    )
