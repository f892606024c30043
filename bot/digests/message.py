"""Block Kit for the support-lead channel: handoff digests and "summary unavailable"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.compaction import COMPACTION_AUTHOR
from agents.events import Event
from agents.handoff import HANDOFF_AUTHOR
from agents.summary.record import HandoffRecord
from agents.summary.render import to_blocks
from bot.slack.limits import sections
from bot.slack.mrkdwn import escape
from bot.slack.permalinks import ThreadLinks
from bot.threads.summaries import UNAVAILABLE, problem_list

Block = dict[str, Any]


def owning_agents(events: Sequence[Event]) -> list[str]:
    """Agents that answered in the thread, in the order they first did."""
    seen: list[str] = []
    for event in events:
        if event.author in ("user", COMPACTION_AUTHOR, HANDOFF_AUTHOR):
            continue
        if event.error_code or not event.text:
            continue
        if event.is_final_response() and event.author not in seen:
            seen.append(event.author)
    return seen


def digest_message(
    record: HandoffRecord,
    *,
    events: Sequence[Event],
    links: ThreadLinks,
    cost: float,
    attempts: int,
    previous_link: str | None = None,
) -> tuple[str, list[Block]]:
    """The digest: a header linking the thread, the record, owners and cost."""
    title = "Updated handoff digest" if previous_link else "Handoff digest"
    # The channel mention stays outside the link: inside, its `>` would end the link.
    intro = f"*<{links.thread_link}|{title}>* for a thread in <#{links.channel}>"
    if previous_link:
        intro += f"\nThis updates the <{previous_link}|earlier digest> of this thread."
    blocks: list[Block] = [{"type": "section", "text": {"type": "mrkdwn", "text": intro}}]
    link_for = links.shown_link_for(events)
    blocks += to_blocks(record, events=events, link_for=link_for, title=title)[1:]
    agents = ", ".join(f"`{a}`" for a in owning_agents(events)) or "none"
    footer = f"Owned by {agents} · summary cost ${cost:.4f} · {attempts} attempt(s), validated"
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": footer}]})
    fallback = f"{title}: {escape(record.goal)}"
    return fallback, blocks


def unavailable_message(links: ThreadLinks, problems: Sequence[str]) -> tuple[str, list[Block]]:
    """The notice when no summary passed validation: the link, and why, never the text."""
    text = (
        f"*{UNAVAILABLE}* for <{links.thread_link}|this thread> in <#{links.channel}>. "
        f"It is flagged for a person. The summary failed validation:\n{problem_list(problems)}"
    )
    return f"{UNAVAILABLE} for a thread in <#{links.channel}>", sections(text)
