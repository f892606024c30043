"""Block Kit builders for everything the bot posts. Pure functions, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.slack.mrkdwn import escape

Block = dict[str, Any]

THINKING_TEXT = "_Thinking…_"
# A hand-off note; its post is split into sections, so any length within Slack's own
# input limit fits.
NOTE_MAX_CHARS = 3000
FAILURE_TEXT = (
    "Sorry, I couldn't answer this one. Your message is saved and a person from the "
    "support team will follow up here."
)
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
    context = f"*{escape(agent)}*"
    if len(transfers) > 1:
        context += f"  ·  {escape(transfer_line(transfers))}"
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": text or " "}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": context}]},
    ]


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
        "or send me a DM. Use `/summary &lt;thread link&gt;` or `/handoff &lt;thread link&gt; "
        "&lt;@person | agent&gt; [note]`, or the message shortcuts, to summarise or hand off."
    )
    return {"type": "home", "blocks": notice_blocks(text)}
