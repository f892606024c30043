"""Block Kit views: the hand-off modal and App Home. Pure functions, no I/O.

Block Kit is built only under `bot.slack.render` (`blocks` lists each surface's module).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.slack.render.blocks import notice_blocks
from bot.slack.render.limits import Block
from bot.slack.render.mrkdwn import escape

# The hand-off modal's callback id: its submission is routed by it.
HANDOFF_MODAL = "handoff_modal"
# A hand-off note; its post is split into sections, so any length within Slack's own
# input limit fits.
NOTE_MAX_CHARS = 3000


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
        "callback_id": HANDOFF_MODAL,
        "private_metadata": private_metadata,
        "title": {"type": "plain_text", "text": "Hand off thread"},
        "submit": {"type": "plain_text", "text": "Hand off"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": blocks,
    }


def checking_modal() -> dict[str, Any]:
    """The modal shown at once while the requester is authorised (it names nothing)."""
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": "Hand off thread"},
        "close": {"type": "plain_text", "text": "Close"},
        "blocks": notice_blocks("Checking that you can hand off this thread…"),
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
