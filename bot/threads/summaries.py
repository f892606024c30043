"""Thread summaries for Slack and the terminal: run the summary agent, render what it
validated.

The summariser is any `Summarizer`: `agents.summary.SummaryService`, or a test double
of its shape. Unchecked text is never shown: without a record, the rendering says so,
lists the problems and links the thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from agents.session import Session
from agents.summary import SummaryResult
from agents.summary.record import HandoffRecord
from agents.summary.render import to_text
from bot.slack.blocks import Block, no_summary_blocks, summary_blocks
from bot.slack.mrkdwn import escape
from bot.slack.permalinks import ThreadLinks


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


async def summarize_session(
    summarizer: Summarizer, session: Session, *, links: ThreadLinks | None
) -> SummaryView:
    """Run `summarizer` on `session` and render the outcome; `links` (None in the terminal)
    turns each citation into a link to its Slack message."""
    result = await summarizer.summarize(session)
    record = getattr(result, "record", None)
    if isinstance(record, HandoffRecord):
        return render_record(record, session=session, links=links)
    problems = tuple(str(p) for p in getattr(result, "problems", ()) or ("no summary",))
    return render_no_summary(problems, links=links)


def render_record(
    record: HandoffRecord, *, session: Session, links: ThreadLinks | None
) -> SummaryView:
    """Block Kit for a validated record; each citation links to the Slack message it cites."""
    plain = to_text(record, source_session_id=session.id)
    blocks = summary_blocks(record, events=session.events, links=links)
    return SummaryView(ok=True, text=escape(plain)[:3000], blocks=blocks, plain=plain)


def render_no_summary(problems: tuple[str, ...], *, links: ThreadLinks | None) -> SummaryView:
    """The honest failure: no summary passed validation; here is why, and the thread."""
    listed = "\n".join(f"• {escape(p)}" for p in problems[:10])
    where = f"<{links.thread_link}|this thread>" if links is not None else "this thread"
    text = (
        f"No validated summary is available for {where}. The summary failed validation:\n{listed}"
    )
    return SummaryView(
        ok=False,
        text=text,
        blocks=no_summary_blocks(text),
        plain=f"No validated summary. Problems: {'; '.join(problems)}",
        problems=problems,
    )
