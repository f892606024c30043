"""Block Kit for replies and the bot's notices in a thread. Pure functions, no I/O.

Block Kit is built only under `bot.slack.render`, one module per surface: replies and
notices here, modals and App Home in `views`, thread summaries in `summary_blocks`,
hand-off notices in `handoff_blocks`, the support-lead channel's digests in
`digest_blocks`, and the section and context primitives in `limits`.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.slack.render.limits import Block, context, section
from bot.slack.render.mrkdwn import escape
from bot.threads.transfers import transfer_line

__all__ = [
    "BUSY_TEXT",
    "FAILURE_TEXT",
    "FEEDBACK_ACTION",
    "FEEDBACK_BLOCK_PREFIX",
    "INTERRUPTED_TEXT",
    "THINKING_TEXT",
    "Block",
    "continuation_blocks",
    "feedback_block",
    "notice_blocks",
    "reply_blocks",
    "reply_context",
    "thinking_blocks",
    "transfer_line",
]

THINKING_TEXT = "_Thinking…_"
# The feedback buttons' action, and their block's id prefix (the reply's event id follows).
FEEDBACK_ACTION = "reply_feedback"
FEEDBACK_BLOCK_PREFIX = "feedback:"
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


def thinking_blocks() -> list[Block]:
    """The placeholder a reply replaces once it is written."""
    return [context(THINKING_TEXT)]


def reply_blocks(text: str, *, agent: str, transfers: Sequence[str] = ()) -> list[Block]:
    """A reply: its mrkdwn text, then a context line naming the agent (and any transfer)."""
    return [section(text), reply_context(agent, transfers)]


def reply_context(agent: str, transfers: Sequence[str] = ()) -> Block:
    """The context line under a reply: the agent that wrote it, and any transfer."""
    line = f"*{escape(agent)}*"
    if len(transfers) > 1:
        line += f"  ·  {escape(transfer_line(transfers))}"
    return context(line)


def feedback_block(event_id: str) -> Block:
    """Slack's feedback buttons under an AI reply: the block names the reply's event, so
    a click is stored against it (`bot.slack.assistant.feedback`)."""
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
    return [section(text)]


def notice_blocks(text: str) -> list[Block]:
    """A plain notice from the bot itself (failures, confirmations)."""
    return [section(text)]
