"""Slack's documented limits on what the bot posts, and fitting escaped text within them.

Every figure is from Slack's Block Kit and Web API reference. Text is measured after
escaping (`&` becomes `&amp;`), because that is what Slack counts. Nothing is cut:
long text is split on line boundaries into more sections, and more sections than one
message holds become more messages (see `bot.slack.posting`).
"""

from __future__ import annotations

from typing import Any

from bot.slack.mrkdwn import split_message

Block = dict[str, Any]

SECTION_TEXT = 3_000  # a section block's text
SECTION_FIELD_TEXT = 2_000
HEADER_TEXT = 150  # a header block's plain_text
CONTEXT_ELEMENTS = 10
CONTEXT_TEXT = 3_000  # any text object inside a context block
BLOCKS_PER_MESSAGE = 50
BLOCKS_PER_VIEW = 100  # modals and App Home
MESSAGE_TEXT = 40_000  # a message's top-level `text`: Slack truncates beyond it
VIEW_TITLE = 24  # a modal's title, submit and close labels
INPUT_LABEL = 2_000
OPTION_TEXT = 75
OPTION_VALUE = 150
OPTIONS_PER_SELECT = 100
PRIVATE_METADATA = 3_000
PLAIN_TEXT_INPUT = 3_000  # a plain_text_input's max_length


def section(text: str) -> Block:
    """One mrkdwn section (the caller keeps `text` within `SECTION_TEXT`)."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": text or " "}}


def sections(text: str) -> list[Block]:
    """As many mrkdwn sections as escaped `text` needs, split on line boundaries."""
    return [section(chunk) for chunk in split_message(text, SECTION_TEXT)]


def fit_sections(blocks: list[Block]) -> list[Block]:
    """`blocks` with every oversize mrkdwn section split into several; nothing dropped."""
    fitted: list[Block] = []
    for block in blocks:
        text = block.get("text") if block.get("type") == "section" else None
        if isinstance(text, dict) and text.get("type") == "mrkdwn":
            body = str(text.get("text", ""))
            if len(body) > SECTION_TEXT:
                fitted.extend(sections(body))
                continue
        fitted.append(block)
    return fitted


def plain_label(text: str, limit: int) -> str:
    """A plain_text label within `limit` characters, shortened visibly with `…`."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
