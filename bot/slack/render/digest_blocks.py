"""Block Kit for the support-lead channel's digests and "summary unavailable" notices.
Pure functions, no I/O.

Block Kit is built only under `bot.slack.render` (`blocks` lists each surface's module).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agents.events import Event
from agents.knowledge.thread_sources import thread_sources
from agents.summary.record import HandoffRecord
from agents.summary.render import status_label
from agents.summary.results import WindowGap
from bot.slack.permalinks import ThreadLinks
from bot.slack.render.limits import Block, context, section, sections
from bot.slack.render.mrkdwn import escape
from bot.slack.render.sources import thread_sources_blocks
from bot.slack.render.summary_blocks import (
    UNAVAILABLE,
    gaps_block,
    problem_list,
    record_blocks,
    unsummarised_block,
)


def digest_message(
    record: HandoffRecord,
    *,
    events: Sequence[Event],
    links: ThreadLinks,
    owners: Sequence[str],
    cost: float,
    attempts: int,
    update_note: str | None = None,
    gaps: Sequence[WindowGap] = (),
    windows: int = 0,
    feedback: Mapping[tuple[str, str], int] | None = None,
    unsummarised: WindowGap | None = None,
) -> tuple[str, list[Block]]:
    """The digest: a header linking the thread, what changed when it updates the
    thread's earlier digest message (`update_note`), the record, the documentation its
    replies cited, any windows it lacks (linked to their raw messages), the feedback its
    replies got, owners and cost."""
    title = "Updated handoff digest" if update_note else "Handoff digest"
    # The channel mention stays outside the link: inside, its `>` would end the link.
    intro = f"*<{links.thread_link}|{title}>* for a thread in <#{links.channel}>"
    blocks: list[Block] = [section(intro)]
    if update_note:
        blocks.append(context(escape(update_note)))
    link_for = links.shown_link_for(events)
    blocks += record_blocks(record, events=events, link_for=link_for, title=title)[1:]
    blocks += thread_sources_blocks(thread_sources(events))
    if gaps:
        blocks.append(gaps_block(gaps, windows, events=events, link_for=link_for))
    if unsummarised is not None:
        blocks.append(unsummarised_block(unsummarised, events=events, link_for=link_for))
    marked = feedback_line(feedback or {})
    if marked:
        blocks.append(context(marked))
    agents = ", ".join(f"`{a}`" for a in owners) or "none"
    blocks.append(
        context(
            f"Owned by {agents} · summary cost ${cost:.4f} · {attempts} attempt(s), "
            f"{status_label(gaps, windows)}"
        )
    )
    fallback = f"{title}: {escape(record.goal)}"
    return fallback, blocks


def feedback_line(counts: Mapping[tuple[str, str], int]) -> str | None:
    """ "customer marked 1 reply unhelpful; staff marked 2 replies helpful", or None
    without feedback; `counts` is replies per (marker, feedback value)."""

    def replies(n: int) -> str:
        return f"{n} repl{'y' if n == 1 else 'ies'}"

    parts = []
    for marker in ("customer", "staff"):
        marks = [
            f"{replies(counts[(marker, value)])} {label}"
            for value, label in (("positive", "helpful"), ("negative", "unhelpful"))
            if counts.get((marker, value))
        ]
        if marks:
            parts.append(f"{marker} marked {' and '.join(marks)}")
    return f"Feedback: {'; '.join(parts)}" if parts else None


def unavailable_message(
    links: ThreadLinks, problems: Sequence[str], *, update_note: str | None = None
) -> tuple[str, list[Block]]:
    """The notice when no summary passed validation: the link, and why, never the text;
    `update_note` when it replaces the thread's earlier digest message."""
    text = (
        f"*{UNAVAILABLE}* for <{links.thread_link}|this thread> in <#{links.channel}>. "
        f"It is flagged for a person. The summary failed validation:\n{problem_list(problems)}"
    )
    blocks = sections(text)
    if update_note:
        blocks.insert(1, context(escape(update_note)))
    return f"{UNAVAILABLE} for a thread in <#{links.channel}>", blocks
