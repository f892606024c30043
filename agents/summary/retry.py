"""The request the summariser gets: the fenced transcript, the checklist, and on a retry
the previous answer's problems.

The retry reads each problem's `kind`, never its wording: a dropped value is told where
the checklist found it.
"""

from __future__ import annotations

from agents.summary.aids.checklist import Checklist
from agents.summary.problems import Problem, ProblemKind
from agents.summary.transcript import RenderedTranscript

MAX_LISTED = 30
RETRY_HEADER = "Your previous answer was rejected. Fix every problem below and answer again:"


def first_message(rendered: RenderedTranscript, plan: Checklist, context: str = "") -> str:
    """`context` (the earlier part of the thread, already quoted) when there is one, the
    fenced transcript, then the checklist when there is one."""
    hints = plan.text()
    body = f"{rendered.fenced()}\n\n{hints}" if hints else rendered.fenced()
    return f"{context}\n\n{body}" if context else body


def problem_line(problem: Problem, where: dict[str, str]) -> str:
    """A problem as the retry lists it; a dropped value says where it is."""
    line = problem.message
    located = where.get(problem.value.casefold())
    if problem.kind is ProblemKind.DROPPED_ENTITY and problem.value and located:
        line += f": add an item citing {located} that states it"
    return line


def retry_message(
    rendered: RenderedTranscript, plan: Checklist, problems: list[Problem], context: str = ""
) -> str:
    """The same request with the problems appended (at most `MAX_LISTED`, then how many
    more there are).

    The rejected answer is deliberately not shown: measured on the embedded model, a
    small model shown its answer copies it, problems and all, instead of fixing it.
    """
    where = plan.locations()
    lines = [f"- {problem_line(p, where)}" for p in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        # Said, not cut silently: the model knows the list goes on, and so does a reader
        # of the request.
        cut = len(problems) - MAX_LISTED
        lines.append(f"- ...and {cut} more problem(s) not listed; fix those above first")
    listed = "\n".join(lines)
    return f"{first_message(rendered, plan, context)}\n\n{RETRY_HEADER}\n{listed}"
