"""Block Kit for the notices a hand-off posts: in the thread, and in the support-lead
channel. Pure functions, no I/O.

Block Kit is built only under `bot.slack.render` (`blocks` lists each surface's module).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.slack.permalinks import ThreadLinks
from bot.slack.render.limits import Block, section
from bot.slack.render.mrkdwn import escape
from bot.slack.render.summary_blocks import UNAVAILABLE, summary_message
from bot.threads.summaries import ThreadSummary


@dataclass(frozen=True)
class PersonHandoff:
    """A hand-off to a person: the notification text, then the blocks posted in the
    thread and those posted in the support-lead channel (which link the thread)."""

    text: str
    thread_blocks: list[Block]
    lead_blocks: list[Block]


def person_handoff(
    *, person: str, requester: str, note: str, summary: ThreadSummary, links: ThreadLinks
) -> PersonHandoff:
    """Who handed the thread to whom, the note quoted, then the summary (or where to
    read the thread when none passed validation)."""
    text = f"<@{person}>, <@{requester}> handed this thread off to you."
    header = text + quoted_note(requester, note)
    if not summary.ok:
        header += f"\n*{UNAVAILABLE}*: read <{links.thread_link}|the thread> itself."
    _, record = summary_message(summary, links=links)
    lead_header = f"{header}\n<{links.thread_link}|Open the thread>"
    return PersonHandoff(
        text=text,
        thread_blocks=[section(header), *record],
        lead_blocks=[section(lead_header), *record],
    )


def agent_handoff(
    *, requester: str, agent: str, note: str, summary: ThreadSummary
) -> tuple[str, list[Block]]:
    """The thread's notice that `agent` takes it over, from the summary when one passed
    validation, with the requester's note quoted: its notification text and its blocks."""
    message = f"<@{requester}> handed this thread to *{escape(agent)}*."
    if not summary.ok:
        message += f" {UNAVAILABLE}: it starts from the thread's own messages."
    return message, [section(message + quoted_note(requester, note))]


def quoted_note(writer: str, note: str) -> str:
    """A note as its writer's own words: attributed to them and quoted, escaped so it
    pings no one and formats nothing (empty when there is no note)."""
    if not note.strip():
        return ""
    lines = "\n".join(f">{escape(line)}" for line in note.splitlines())
    return f"\n<@{writer}> wrote:\n{lines}"
