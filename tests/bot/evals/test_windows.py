"""`eval summaries --mode both`: each conversation replayed through the windows as live,
then merged, beside the whole-thread summary, on the same conversations."""

from __future__ import annotations

from agents.summary.service import SummaryService
from bot.evals.dataset import conversation_from_row
from bot.evals.windows import (
    ModeReport,
    by_source,
    compare_modes,
    mode_order,
    side_by_side,
    thread_line,
)
from tests.fakes.transcript_summarizer import TranscriptSummarizer


def row(conversation_id: str, turns: int) -> dict[str, object]:
    events: list[dict[str, object]] = []
    for turn in range(1, turns + 1):
        events.append({"author": "user", "text": f"Where is order A-{1000 + turn}?"})
        events.append({"author": "agent", "text": f"Order A-{1000 + turn} is on its way."})
    labels = [
        {"type": "order_id", "value": f"A-{1000 + t}", "surfaces": [], "event_ids": []}
        for t in range(1, turns + 1)
    ]
    return {"id": conversation_id, "events": events, "expected_entities": labels}


async def test_replay_writes_windows_as_live_and_summarises_only_the_tail_at_idle() -> None:
    conversations = [
        conversation_from_row(row("star-1", 7)),
        conversation_from_row(row("tau-1", 2)),
    ]
    model = TranscriptSummarizer(fail=("A-1005",))
    seen: list[str] = []
    incremental, whole = await compare_modes(
        conversations,
        SummaryService(model),
        interval=3,
        on_score=lambda mode, score: seen.append(thread_line(mode, score)),
    )
    star, tau = incremental.scores
    # 7 turns: two windows closed live, the last turn summarised at idle.
    assert (star.windows, star.gaps, star.windows_first_pass) == (3, 1, 2)
    # The gap (turns 4-6) loses its three orders; the merged record has the other four.
    assert star.has_record and star.recalled_high_value == 4 and star.expected_high_value == 7
    assert 0 < star.idle_s < star.total_s
    # Tokens, which a loaded machine does not change: the idle tail is one turn's record,
    # the whole thread's record is all of it.
    assert 0 < star.idle_generated_tokens < star.generated_tokens
    assert star.prompt_tokens > star.generated_tokens
    # 2 turns: no window closed live, one at idle.
    assert (tau.windows, tau.gaps) == (1, 0) and tau.idle_s <= tau.total_s
    # Whole: one summary of the thread, which fails on the dropped value.
    assert [(s.windows, s.has_record) for s in whole.scores] == [(1, False), (1, True)]
    assert all(0 < s.idle_generated_tokens == s.generated_tokens for s in whole.scores)
    # star: 3 windows + 1 retry, whole + 1 retry; tau: 1 window, whole.
    assert len(model.transcripts) == (3 + 1) + (1 + 1) + 1 + 1
    assert seen[0].startswith("[incremental] star-1: gaps windows=3 first-pass=2/3 recall=4/7")
    # The second conversation runs `whole` first: neither mode always gets the prompt the
    # other just left in the server's cache.
    assert [line.split()[0] for line in seen] == [
        "[incremental]",
        "[whole]",
        "[whole]",
        "[incremental]",
    ]
    assert thread_line("incremental", star, problems=True).endswith(
        "\n    e7–e12 (gap): dropped entity A-1005"
    )

    table = "\n".join(side_by_side([incremental, whole]))
    assert "window first-attempt pass" in table and "threads with gaps" in table
    assert "1 (50.0%)" in table
    assert "tokens generated at idle (median)" in table
    assert set(by_source([incremental, whole])) == {"star", "tau"}


def test_an_empty_report_prints_without_dividing_by_zero() -> None:
    table = side_by_side([ModeReport("incremental")])
    assert table[1].split() == ["threads", "0"]


def test_a_thread_line_and_the_table_show_the_repairs() -> None:
    from bot.evals.windows import ThreadScore

    score = ThreadScore(
        conversation_id="star-1",
        windows=2,
        windows_first_pass=2,
        gaps=0,
        has_record=True,
        expected_high_value=1,
        recalled_high_value=1,
        total_s=1.0,
        idle_s=0.0,
        repairs={"recited": 2, "unsupported": 0, "answered": 1},
    )
    line = thread_line("incremental", score)
    assert line.endswith(" recited=2 answered=1") and "unsupported" not in line
    table = side_by_side([ModeReport("incremental", [score])])
    assert table[-1].startswith("items re-cited / dropped unsupported / answered questions")
    assert table[-1].endswith("2 / 0 / 1")


def test_the_modes_take_turns_at_going_first() -> None:
    modes = ("incremental", "whole")
    assert [mode_order(modes, i) for i in range(3)] == [
        ["incremental", "whole"],
        ["whole", "incremental"],
        ["incremental", "whole"],
    ]
    assert mode_order(("whole",), 5) == ["whole"]
