"""What a merged record's windows needed: each gap, and each passed window's first
attempt that a retry mended, as problems of the thread's summary."""

from __future__ import annotations

from collections.abc import Sequence

from agents.summary.problems import Problem, ProblemKind
from agents.summary.windows import StoredWindow


def gap_problem(window: StoredWindow) -> Problem:
    """A failed window as a problem of the thread's summary."""
    first = window.problems[0] if window.problems else "no record passed validation"
    return Problem(
        ProblemKind.WINDOW_GAP,
        (window.span.start_id, window.span.end_id),
        f"events {window.span.label()} not summarised: {first}",
    )


def first_attempt_problems(windows: Sequence[StoredWindow]) -> list[Problem]:
    """What a merged record's windows needed, in event order: each gap, and each passed
    window's first problem that a retry mended."""
    problems = []
    for window in windows:
        if window.record is None:
            problems.append(gap_problem(window))
        elif window.problems:
            problems.append(
                Problem(
                    ProblemKind.WINDOW_RETRIED,
                    (window.span.start_id, window.span.end_id),
                    f"events {window.span.label()} passed on attempt {window.attempts}, "
                    f"after: {window.problems[0]}",
                )
            )
    return problems
