"""The agents a reply passed through, as one line of text for any transport.

The terminal prints it above a reply; Slack escapes it into the reply's context line
(`bot.slack.render.blocks.reply_context`).
"""

from __future__ import annotations

from collections.abc import Sequence


def transfer_line(path: Sequence[str]) -> str:
    """`support_supervisor → billing_agent` for the agents a reply passed through."""
    return " → ".join(path)
