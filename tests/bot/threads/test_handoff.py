"""A hand-off to an agent from a partial record carries every word the record does not:
the raw events of each gap window and of the unsummarised open tail, fenced, masked and
pointed back to, after the merged record."""

from __future__ import annotations

from agents.summary.results import Summary
from agents.summary.transcript import FENCE_CLOSE, FENCE_OPEN
from bot.threads.handoff import handoff_text
from bot.threads.summaries import summarize_session
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
