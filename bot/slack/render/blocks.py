"""Block Kit builders for everything the bot posts. Pure functions, no I/O.

Every Block Kit payload is built here: replies and notices, the handoff modal and App
Home, thread summaries, and the support-lead channel's digests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents.events import Event, event_seq
from agents.summary.record import HandoffRecord, Item
from agents.summary.render import CLAIM_LABEL, ORDER, gaps_text, status_label, unsummarised_text
from agents.summary.results import WindowGap
from bot.slack.permalinks import ThreadLinks
from bot.slack.render.limits import sections
from bot.slack.render.mrkdwn import escape

Block = dict[str, Any]
LinkFor = Callable[[Event], "str | None"]
UNAVAILABLE = "Summary unavailable"
PROBLEM_CHARS = 300
LISTED_PROBLEMS = 10

THINKING_TEXT = "_Thinking…_"
# The feedback buttons' action, and their block's id prefix (the reply's event id follows).
FEEDBACK_ACTION = "reply_feedback"
FEEDBACK_BLOCK_PREFIX = "feedback:"
# A hand-off note; its post is split into sections, so any length within Slack's own
# input limit fits.
NOTE_MAX_CHARS = 3000
FAILURE_TEXT = (
    "Sorry, I couldn't answer this one. Your message is saved and a person from the "
    "support team will follow up here."
)
# Answer to a request over a named limit (a user's rate, a thread's queue cap).
BUSY_TEXT = "I'm busy right now and didn't take that message. Please try again shortly."
INTERRUPTED_TEXT = (
    "I was restarted before I could answer. Your message is saved and a person from the "
    "support team will follow up here."
)


def transfer_line(path: Sequence[str]) -> str:
    """`support_supervisor → billing_agent` for the agents a reply passed through."""
    return " → ".join(path)


def thinking_blocks() -> list[Block]:
    return [{"type": "context", "elements": [{"type": "mrkdwn", "text": THINKING_TEXT}]}]


def reply_blocks(text: str, *, agent: str, transfers: Sequence[str] = ()) -> list[Block]:
    """A reply: its mrkdwn text, then a context line naming the agent (and any transfer)."""
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": text or " "}},
        reply_context(agent, transfers),
    ]


def reply_context(agent: str, transfers: Sequence[str] = ()) -> Block:
    """The context line under a reply: the agent that wrote it, and any transfer."""
    context = f"*{escape(agent)}*"
    if len(transfers) > 1:
        context += f"  ·  {escape(transfer_line(transfers))}"
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": context}]}


def feedback_block(event_id: str) -> Block:
    """Slack's feedback buttons under an AI reply: the block names the reply's event, so
    a click is stored against it (`bot.slack.feedback`)."""
    return {
        "type": "context_actions",
        "block_id": f"{FEEDBACK_BLOCK_PREFIX}{event_id}",
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": FEEDBACK_ACTION,
                "positive_button": {
                    "text": {"type": "plain_text", "text": "👍"},
                    "value": "positive",
                    "accessibility_label": "This reply was helpful",
                },
                "negative_button": {
                    "text": {"type": "plain_text", "text": "👎"},
                    "value": "negative",
                    "accessibility_label": "This reply was not helpful",
                },
            }
        ],
    }


def continuation_blocks(text: str) -> list[Block]:
    """A follow-on chunk of a reply too long for one message."""
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text or " "}}]


def notice_blocks(text: str) -> list[Block]:
    """A plain notice from the bot itself (failures, confirmations)."""
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]


def handoff_modal(*, private_metadata: str, agents: Sequence[str]) -> dict[str, Any]:
    """The "Hand off thread" modal: a person or an agent, and an optional note."""
    agent_options = [
        {"text": {"type": "plain_text", "text": name[:75]}, "value": name} for name in agents
    ][:100]
    person: Block = {
        "type": "input",
        "block_id": "person",
        "optional": True,
        "label": {"type": "plain_text", "text": "Hand off to a person"},
        "element": {"type": "users_select", "action_id": "value"},
    }
    agent: Block = {
        "type": "input",
        "block_id": "agent",
        "optional": True,
        "label": {"type": "plain_text", "text": "…or to an agent"},
        "element": {"type": "static_select", "action_id": "value", "options": agent_options},
    }
    note: Block = {
        "type": "input",
        "block_id": "note",
        "optional": True,
        "label": {"type": "plain_text", "text": "Note"},
        "element": {
            "type": "plain_text_input",
            "action_id": "value",
            "multiline": True,
            "max_length": NOTE_MAX_CHARS,
        },
    }
    blocks = [person, agent, note] if agent_options else [person, note]
    return {
        "type": "modal",
        "callback_id": "handoff_modal",
        "private_metadata": private_metadata,
        "title": {"type": "plain_text", "text": "Hand off thread"},
        "submit": {"type": "plain_text", "text": "Hand off"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": blocks,
    }


def refusal_modal(text: str) -> dict[str, Any]:
    """A modal that only says why nothing can be done (no agent names, no thread)."""
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": "Hand off thread"},
        "close": {"type": "plain_text", "text": "Close"},
        "blocks": notice_blocks(escape(text)),
    }


def home_view() -> dict[str, Any]:
    """App Home: what the bot does and how to use it."""
    text = (
        "*Support bot*\nMention me in a channel to start a conversation in that thread, "
        "send me a DM, or open me in Slack's AI apps panel. Under each answer, 👍 or 👎 "
        "tells the support team how it did. Use `/summary &lt;thread link&gt;` or "
        "`/handoff &lt;thread link&gt; &lt;@person | agent&gt; [note]`, or the message "
        "shortcuts, to summarise or hand off."
    )
    return {"type": "home", "blocks": notice_blocks(text)}


def _section(text: str) -> Block:
    # Never cut here: whoever posts splits an oversize section on line boundaries
    # (`bot.slack.render.limits`).
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


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
    next reader more than a missed fact.
    """
    by_id = {event.id: event for event in events}
    blocks: list[Block] = [
        {"type": "header", "text": {"type": "plain_text", "text": title[:150]}},
        _section(f"*Goal:* {escape(record.goal)}"),
    ]
    for section, heading in ORDER:
        items: list[Item] = getattr(record, section)
        if not items:
            continue
        lines = []
        for item in items:
            claim = f"_{CLAIM_LABEL}:_ " if item.user_claim else ""
            text = escape(item.text)
            if section == "commitments":
                text = f"*{text}*"
            lines.append(f"• {claim}{text} ({_source_refs(item, by_id, link_for)})")
        marker = ":handshake: " if section == "commitments" else ""
        blocks.append(_section(f"{marker}*{heading}*\n" + "\n".join(lines)))
    if any(item.user_claim for _, _, item in record.items()):
        blocks.append(
            _context(f"_{CLAIM_LABEL}_: what the user wrote and no agent or tool stated.")
        )
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
    return _section(f":warning: {gaps_text(gaps, windows, ranges)} (not summarised)")


def unsummarised_block(
    tail: WindowGap, *, events: Sequence[Event], link_for: LinkFor | None
) -> Block:
    """The thread's last messages, which hold no values and wait for the next window,
    linked to the raw messages."""
    return _context(unsummarised_text(tail, _gap_range(tail, events, link_for)))


def summary_blocks(
    record: HandoffRecord,
    *,
    events: Sequence[Event],
    links: ThreadLinks | None,
    gaps: Sequence[WindowGap] = (),
    windows: int = 0,
    unsummarised: WindowGap | None = None,
) -> list[Block]:
    """A thread summary asked for in Slack: the record, any gaps, then a line linking the
    thread."""
    link_for = links.shown_link_for(events) if links is not None else None
    blocks = record_blocks(record, events=events, link_for=link_for, title="Thread summary")
    if gaps:
        blocks.append(gaps_block(gaps, windows, events=events, link_for=link_for))
    if unsummarised is not None:
        blocks.append(unsummarised_block(unsummarised, events=events, link_for=link_for))
    if links is not None:
        thread = f"<{links.thread_link}|this thread>"
        line = f"Summary of {thread}, {status_label(gaps, windows)}" if gaps else None
        blocks.append(_context(line or f"Validated summary of {thread}"))
    return blocks


def no_summary_blocks(text: str) -> list[Block]:
    """The notice that no summary passed validation (`text` says why), split, never cut."""
    return sections(text)


def problem_list(problems: Sequence[str]) -> str:
    """The first problems as escaped bullets, each shortened visibly, and how many more."""
    lines = []
    for problem in problems[:LISTED_PROBLEMS]:
        shown = problem if len(problem) <= PROBLEM_CHARS else problem[: PROBLEM_CHARS - 1] + "…"
        lines.append(f"• {escape(shown)}")
    if len(problems) > LISTED_PROBLEMS:
        lines.append(f"…and {len(problems) - LISTED_PROBLEMS} more")
    return "\n".join(lines)


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
    feedback: Mapping[str, int] | None = None,
    unsummarised: WindowGap | None = None,
) -> tuple[str, list[Block]]:
    """The digest: a header linking the thread, what changed when it updates the
    thread's earlier digest message (`update_note`), the record, any windows it lacks
    (linked to their raw messages), the feedback its replies got, owners and cost."""
    title = "Updated handoff digest" if update_note else "Handoff digest"
    # The channel mention stays outside the link: inside, its `>` would end the link.
    intro = f"*<{links.thread_link}|{title}>* for a thread in <#{links.channel}>"
    blocks: list[Block] = [_section(intro)]
    if update_note:
        blocks.append(_context(escape(update_note)))
    link_for = links.shown_link_for(events)
    blocks += record_blocks(record, events=events, link_for=link_for, title=title)[1:]
    if gaps:
        blocks.append(gaps_block(gaps, windows, events=events, link_for=link_for))
    if unsummarised is not None:
        blocks.append(unsummarised_block(unsummarised, events=events, link_for=link_for))
    marked = feedback_line(feedback or {})
    if marked:
        blocks.append(_context(marked))
    agents = ", ".join(f"`{a}`" for a in owners) or "none"
    status = status_label(gaps, windows)
    blocks.append(
        _context(f"Owned by {agents} · summary cost ${cost:.4f} · {attempts} attempt(s), {status}")
    )
    fallback = f"{title}: {escape(record.goal)}"
    return fallback, blocks


def feedback_line(counts: Mapping[str, int]) -> str | None:
    """ "customer marked 1 reply unhelpful" (and how many helpful), or None without
    feedback; `counts` is replies per feedback value."""

    def replies(n: int) -> str:
        return f"{n} repl{'y' if n == 1 else 'ies'}"

    marks = [
        f"{replies(counts[value])} {label}"
        for value, label in (("positive", "helpful"), ("negative", "unhelpful"))
        if counts.get(value)
    ]
    return f"Feedback: customer marked {' and '.join(marks)}" if marks else None


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
        blocks.insert(1, _context(escape(update_note)))
    return f"{UNAVAILABLE} for a thread in <#{links.channel}>", blocks
