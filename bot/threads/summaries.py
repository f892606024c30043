"""Thread summaries for Slack and the terminal: run the summary agent, render what it
validated.

The summariser is any `Summarizer`: `agents.summary.SummaryService`, or a test double
of its shape. Unchecked text is never shown: without a record, the rendering says so,
lists the problems and links the thread.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Protocol

from agents.sessions.session import Session
from agents.summary import SummaryResult
from agents.summary.metrics import DeliverySink, count_delivery
from agents.summary.record import HandoffRecord
from agents.summary.render import to_text
from agents.summary.results import WindowGap
from bot.slack.permalinks import ThreadLinks
from bot.slack.render.blocks import (
    UNAVAILABLE,
    Block,
    no_summary_blocks,
    problem_list,
    summary_blocks,
)
from bot.slack.render.mrkdwn import escape

log = logging.getLogger(__name__)

# A failed model call names its error code; the provider's own words (host names, key
# fragments) go to the logs only.
_MODEL_FAILURE = re.compile(r"^(model call failed \([\w.-]{1,64}\))")


class Summarizer(Protocol):
    """Summarises a session into a validated record or a typed no-summary."""

    async def summarize(self, session: Session) -> SummaryResult:
        """A `Summary` with a validated `record`, or a `NoSummary` with its `problems`."""
        ...


@dataclass(frozen=True)
class SummaryView:
    """A summary outcome ready to post: text fallback, blocks, plain text, problems."""

    ok: bool
    text: str
    blocks: list[Block]
    plain: str
    problems: tuple[str, ...] = ()
    # What the record does not cover: windows no validated record covers, and the open
    # tail left unsummarised (a hand-off carries their raw events).
    gaps: tuple[WindowGap, ...] = ()
    unsummarised: WindowGap | None = None


async def summarize_session(
    summarizer: Summarizer,
    session: Session,
    *,
    links: ThreadLinks | None,
    surface: str,
    deliveries: DeliverySink | None = None,
) -> SummaryView:
    """Run `summarizer` on `session` and render the outcome; `links` (None in the terminal)
    turns each citation into a link to its Slack message. What `surface` (`summary` or
    `handoff`) receives is counted, and stored in `deliveries`."""
    result = await summarizer.summarize(session)
    await count_delivery(result, surface, deliveries)
    record = getattr(result, "record", None)
    if isinstance(record, HandoffRecord):
        gaps = tuple(getattr(result, "gaps", ()))
        windows = int(getattr(result, "windows", 0))
        tail = getattr(result, "unsummarised", None)
        return render_record(
            record, session=session, links=links, gaps=gaps, windows=windows, unsummarised=tail
        )
    problems = tuple(str(p) for p in getattr(result, "problems", ()) or ("no summary",))
    return render_no_summary(public_problems(problems), links=links)


def public_problems(problems: tuple[str, ...]) -> tuple[str, ...]:
    """What a person may see of why a summary failed: validation problems as they are,
    a failed model call as its error code only (the detail is logged)."""
    shown = []
    for problem in problems:
        failure = _MODEL_FAILURE.match(problem)
        if failure is not None:
            log.warning("summary model call failed: %s", problem)
            problem = failure.group(1)
        shown.append(problem)
    return tuple(shown)


def render_record(
    record: HandoffRecord,
    *,
    session: Session,
    links: ThreadLinks | None,
    gaps: tuple[WindowGap, ...] = (),
    windows: int = 0,
    unsummarised: WindowGap | None = None,
) -> SummaryView:
    """Block Kit for a validated record; each citation links to the Slack message it cites,
    each of its `gaps` and an `unsummarised` tail to the raw messages no record covers."""
    plain = to_text(
        record, source_session_id=session.id, gaps=gaps, windows=windows, unsummarised=unsummarised
    )
    blocks = summary_blocks(
        record,
        events=session.events,
        links=links,
        gaps=gaps,
        windows=windows,
        unsummarised=unsummarised,
    )
    # The fallback text is the notification only; the blocks carry the whole record.
    return SummaryView(
        ok=True,
        text=f"Thread summary: {escape(record.goal)}",
        blocks=blocks,
        plain=plain,
        gaps=gaps,
        unsummarised=unsummarised,
    )


def render_no_summary(problems: tuple[str, ...], *, links: ThreadLinks | None) -> SummaryView:
    """The honest failure: no summary passed validation; here is why, and the thread."""
    where = f"<{links.thread_link}|this thread>" if links is not None else "this thread"
    text = f"*{UNAVAILABLE}* for {where}: no summary passed validation.\n{problem_list(problems)}"
    return SummaryView(
        ok=False,
        text=f"{UNAVAILABLE} for this thread.",
        blocks=no_summary_blocks(text),
        plain=f"No validated summary. Problems: {'; '.join(problems)}",
        problems=problems,
    )
