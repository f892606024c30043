"""Block Kit for handoff records: a thread summary asked for in Slack, and the record
part of a hand-off or digest. Pure functions, no I/O.

Block Kit is built only under `bot.slack.render` (`blocks` lists each surface's module).
Each citation links to the Slack message it cites, when there is one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agents.events import Event, event_seq
from agents.knowledge.thread_sources import thread_sources
from agents.summary.record import HandoffRecord, Item
from agents.summary.render import CLAIM_LABEL, ORDER, gaps_text, status_label, unsummarised_text
from agents.summary.results import WindowGap
from bot.slack.permalinks import ThreadLinks
from bot.slack.render.limits import Block, context, section, sections
from bot.slack.render.mrkdwn import escape
from bot.slack.render.sources import thread_sources_blocks
from bot.threads.summaries import ThreadSummary

LinkFor = Callable[[Event], "str | None"]
UNAVAILABLE = "Summary unavailable"
PROBLEM_CHARS = 300
LISTED_PROBLEMS = 10


def _source_refs(item: Item, events: dict[str, Event], link_for: LinkFor | None) -> str:
    refs = []
    for source in item.sources:
        event = events.get(source)
        url = link_for(event) if (link_for is not None and event is not None) else None
        refs.append(f"<{url}|{source}>" if url else source)
    return ", ".join(refs)


def record_blocks(
    record: HandoffRecord,
    *,
    events: Sequence[Event] = (),
    link_for: LinkFor | None = None,
    title: str = "Handoff summary",
) -> list[Block]:
    """A handoff record; each source links to its Slack message when `link_for` gives one.

    User claims are marked; commitments stand out, because a broken promise costs the
    next reader more than a missed fact. Sections are never cut here: whoever posts
    splits an oversize one on line boundaries (`bot.slack.render.limits`).
    """
    by_id = {event.id: event for event in events}
    blocks: list[Block] = [
        {"type": "header", "text": {"type": "plain_text", "text": title[:150]}},
        section(f"*Goal:* {escape(record.goal)}"),
    ]
    for field, heading in ORDER:
        items: list[Item] = getattr(record, field)
        if not items:
            continue
        lines = []
        for item in items:
            claim = f"_{CLAIM_LABEL}:_ " if item.user_claim else ""
            text = escape(item.text)
            if field == "commitments":
                text = f"*{text}*"
            lines.append(f"• {claim}{text} ({_source_refs(item, by_id, link_for)})")
        marker = ":handshake: " if field == "commitments" else ""
        blocks.append(section(f"{marker}*{heading}*\n" + "\n".join(lines)))
    if any(item.user_claim for _, _, item in record.items()):
        blocks.append(context(f"_{CLAIM_LABEL}_: what the user wrote and no agent or tool stated."))
    return blocks


def _gap_range(gap: WindowGap, events: Sequence[Event], link_for: LinkFor | None) -> str:
    """`e12–e20`, each end linked to the first and last message of the range that has
    one, so a reader goes straight to the raw messages no record covers."""
    if link_for is None:
        return gap.label()
    start, end = event_seq(gap.start_id), event_seq(gap.end_id)
    linked = [(e.id, url) for e in events if start <= e.seq <= end and (url := link_for(e))]
    if not linked:
        return gap.label()
    first, last = linked[0], linked[-1]
    if first == last:
        return f"<{first[1]}|{gap.label()}>"
    return f"<{first[1]}|{gap.start_id}>–<{last[1]}|{gap.end_id}>"


def gaps_block(
    gaps: Sequence[WindowGap], windows: int, *, events: Sequence[Event], link_for: LinkFor | None
) -> Block:
    """`2 of 9 windows unavailable: see e12–e20, e41–e47`, linking the raw messages."""
    ranges = [_gap_range(gap, events, link_for) for gap in gaps]
    return section(f":warning: {gaps_text(gaps, windows, ranges)} (not summarised)")


def unsummarised_block(
    tail: WindowGap, *, events: Sequence[Event], link_for: LinkFor | None
) -> Block:
    """The thread's last messages, which hold no values and wait for the next window,
    linked to the raw messages."""
    return context(unsummarised_text(tail, _gap_range(tail, events, link_for)))


def summary_blocks(
    record: HandoffRecord,
    *,
    events: Sequence[Event],
    links: ThreadLinks | None,
    gaps: Sequence[WindowGap] = (),
    windows: int = 0,
    unsummarised: WindowGap | None = None,
) -> list[Block]:
    """A thread summary asked for in Slack: the record, the documentation the replies
    cited, any gaps, then a line linking the thread."""
    link_for = links.shown_link_for(events) if links is not None else None
    blocks = record_blocks(record, events=events, link_for=link_for, title="Thread summary")
    blocks += thread_sources_blocks(thread_sources(events))
    if gaps:
        blocks.append(gaps_block(gaps, windows, events=events, link_for=link_for))
    if unsummarised is not None:
        blocks.append(unsummarised_block(unsummarised, events=events, link_for=link_for))
    if links is not None:
        thread = f"<{links.thread_link}|this thread>"
        line = f"Summary of {thread}, {status_label(gaps, windows)}" if gaps else None
        blocks.append(context(line or f"Validated summary of {thread}"))
    return blocks


def without_tool_items(record: HandoffRecord, events: Sequence[Event]) -> tuple[HandoffRecord, int]:
    """`record` without the items that cite a tool call or its result, and how many
    were left out: what a summary posted for everyone in a channel may show."""
    tool_ids = {e.id for e in events if e.function_calls or e.function_responses}
    left_out = 0
    kept: dict[str, list[Item]] = {}
    for field, _ in ORDER:
        items: list[Item] = getattr(record, field)
        kept[field] = [item for item in items if not tool_ids.intersection(item.sources)]
        left_out += len(items) - len(kept[field])
    return record.model_copy(update=kept), left_out


def summary_message(
    summary: ThreadSummary, *, links: ThreadLinks, tool_results: bool = True
) -> tuple[str, list[Block]]:
    """A summary outcome as a Slack message: its notification text and its blocks.

    A validated record in full, each citation linked to its Slack message, each of its
    gaps and an unsummarised tail to the raw messages no record covers; otherwise the
    honest failure: no summary passed validation, here is why, and the thread. Without
    `tool_results` (a summary posted in a channel by someone who is not a lead), the
    items drawn from tool calls and their results are left out, and it says so.
    """
    record = summary.record
    if record is None:
        text = (
            f"*{UNAVAILABLE}* for <{links.thread_link}|this thread>: no summary passed "
            f"validation.\n{problem_list(summary.problems)}"
        )
        return f"{UNAVAILABLE} for this thread.", sections(text)
    left_out = 0
    if not tool_results:
        record, left_out = without_tool_items(record, summary.session.events)
    blocks = summary_blocks(
        record,
        events=summary.session.events,
        links=links,
        gaps=summary.gaps,
        windows=summary.windows,
        unsummarised=summary.unsummarised,
    )
    if left_out:
        blocks.append(
            context(f"{left_out} item(s) drawn from tool results are shown to support leads only.")
        )
    # The fallback text is the notification only; the blocks carry the whole record.
    return f"Thread summary: {escape(record.goal)}", blocks


def problem_list(problems: Sequence[str]) -> str:
    """The first problems as escaped bullets, each shortened visibly, and how many more."""
    lines = []
    for problem in problems[:LISTED_PROBLEMS]:
        shown = problem if len(problem) <= PROBLEM_CHARS else problem[: PROBLEM_CHARS - 1] + "…"
        lines.append(f"• {escape(shown)}")
    if len(problems) > LISTED_PROBLEMS:
        lines.append(f"…and {len(problems) - LISTED_PROBLEMS} more")
    return "\n".join(lines)
