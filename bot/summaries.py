"""Thread summaries for Slack: run the summary agent, render what it validated.

The summariser is anything with `async summarize(session)` returning either an object
with a validated `record` (`agents.summary.record.HandoffRecord`) or one with
`problems` (no summary). Unchecked text is never shown: without a record, the
rendering says so, lists the problems and links the thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.session import Session
from agents.summary.record import SECTIONS, HandoffRecord
from agents.summary.render import to_text
from bot.formatting import escape
from bot.slack_ui import Block

_TITLES = {
    "facts": "Facts",
    "decisions": "Decisions",
    "commitments": "Commitments",
    "open_questions": "Open questions",
}

LinkFor = Callable[[str], "str | None"]


@dataclass(frozen=True)
class SummaryView:
    """A summary outcome ready to post: text fallback, blocks, plain text, problems."""

    ok: bool
    text: str
    blocks: list[Block]
    plain: str
    problems: tuple[str, ...] = ()


async def summarize_session(
    summarizer: Any, session: Session, *, link_for: LinkFor, thread_link: str
) -> SummaryView:
    """Run `summarizer` on `session` and render the outcome for Slack."""
    result = await summarizer.summarize(session)
    record = getattr(result, "record", None)
    if isinstance(record, HandoffRecord):
        return render_record(record, session=session, link_for=link_for, thread_link=thread_link)
    problems = tuple(str(p) for p in getattr(result, "problems", ()) or ("no summary",))
    return render_no_summary(problems, thread_link=thread_link)


def render_record(
    record: HandoffRecord, *, session: Session, link_for: LinkFor, thread_link: str
) -> SummaryView:
    """Block Kit for a validated record; each citation links to the Slack message it cites."""
    ts_by_id = {e.id: e.slack_ts for e in session.events if e.slack_ts}

    def cite(source: str) -> str:
        ts = ts_by_id.get(source)
        url = link_for(ts) if ts else None
        return f"<{url}|{source}>" if url else source

    lines = [f"*Goal:* {escape(record.goal)}"]
    for section in SECTIONS:
        items = getattr(record, section)
        if not items:
            continue
        lines.append(f"*{_TITLES[section]}*")
        for item in items:
            claim = " _(user's claim)_" if item.user_claim else ""
            refs = ", ".join(cite(s) for s in item.sources)
            lines.append(f"• {escape(item.text)}{claim} ({refs})")
    body = "\n".join(lines)
    blocks: list[Block] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": body[:2900]}},
        {
            "type": "context",
            "elements": [
                {"type": "mrkdwn", "text": f"Validated summary of <{thread_link}|this thread>"}
            ],
        },
    ]
    return SummaryView(
        ok=True, text=body, blocks=blocks, plain=to_text(record, source_session_id=session.id)
    )


def render_no_summary(problems: tuple[str, ...], *, thread_link: str) -> SummaryView:
    """The honest failure: no summary passed validation; here is why, and the thread."""
    listed = "\n".join(f"• {escape(p)}" for p in problems[:10])
    text = (
        f"No validated summary is available for <{thread_link}|this thread>. "
        f"The summary failed validation:\n{listed}"
    )
    return SummaryView(
        ok=False,
        text=text,
        blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": text[:2900]}}],
        plain=f"No validated summary. Problems: {'; '.join(problems)}",
        problems=problems,
    )
