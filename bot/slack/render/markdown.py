"""Model text -> the Markdown a streamed Slack message shows, safe at every delta.

A stream (`chat.appendStream`'s `markdown_text`) can never be taken back, so what the
model wrote is made safe before any of it is sent: `&`, `<` and `>` are escaped, which
neutralises every mention and broadcast (`<!channel>`, `<@U123>`), and a link shows its
real URL when its label names another host (`mrkdwn.honest_label`). Escaping works
character by character, so a mention split across deltas is escaped all the same; only
a link must be seen whole, so `MarkdownGate` holds back an unfinished one.
"""

from __future__ import annotations

import re

from bot.slack.render.mrkdwn import escape, honest_label

_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
# The tail of the text that may still become a link: `[label`, `[label]`, `[label](url`.
_OPEN_LINK = re.compile(r"\[[^\]\n]*(?:\](?:\([^)\s]*)?)?\Z")
# A link's label or URL longer than this is not held back any more.
_MAX_HELD = 1_000


def safe_markdown(text: str) -> str:
    """`text` with Slack's control characters escaped and every link honest."""
    out: list[str] = []
    at = 0
    for match in _LINK.finditer(text):
        out.append(escape(text[at : match.start()]))
        url = match.group(2).replace("<", "%3C").replace(">", "%3E")
        out.append(f"[{escape(honest_label(match.group(1), url))}]({url})")
        at = match.end()
    out.append(escape(text[at:]))
    return "".join(out)


class MarkdownGate:
    """Turns a stream of model deltas into safe Markdown, holding back only an
    unfinished link until it closes (or cannot be one)."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, delta: str) -> str:
        """The safe Markdown that `delta` releases (possibly empty)."""
        text = self._held + delta
        start = text.rfind("[")
        if start >= 0 and len(text) - start <= _MAX_HELD and _OPEN_LINK.match(text, start):
            self._held = text[start:]
            return safe_markdown(text[:start])
        self._held = ""
        return safe_markdown(text)

    def flush(self) -> str:
        """Whatever is still held back, made safe: the stream is ending."""
        text, self._held = self._held, ""
        return safe_markdown(text)
