"""Model text -> the Markdown a streamed Slack message shows, safe at every delta.

A stream (`chat.appendStream`'s `markdown_text`) can never be taken back, so what the
model wrote is made safe before any of it is sent: `&`, `<` and `>` are escaped, which
neutralises every mention and broadcast (`<!channel>`, `<@U123>`), and every link, in
whatever form it was written (`links.find_links`), is re-written as a plain
`[label](url)` that shows its real URL when its label names another host
(`links.honest_label`). A reference link cannot be resolved before its definition has
been streamed, so it shows as its label, and a definition shows as `ref: url` text: no
reference syntax ever reaches Slack. Escaping works character by character, so a
mention split across deltas is escaped all the same; only a link must be seen whole,
so `MarkdownGate` holds back an unfinished one.
"""

from __future__ import annotations

from bot.slack.render.links import Link, find_links, honest_label, is_web_url, open_link_start
from bot.slack.render.mrkdwn import escape


def safe_markdown(text: str) -> str:
    """`text` with Slack's control characters escaped and every link honest."""
    out: list[str] = []
    at = 0
    for link in find_links(text):
        out.append(escape(text[at : link.start]))
        out.append(_render(link))
        at = link.end
    out.append(escape(text[at:]))
    return "".join(out)


def _render(link: Link) -> str:
    label = " ".join((link.label or "").split())
    if link.definition:
        return escape(f"{label}: {link.url}")
    if link.url is None:
        return escape(label)
    url = link.url.replace("<", "%3C").replace(">", "%3E").replace("(", "%28").replace(")", "%29")
    shown = honest_label(label, url) if label else url
    return f"[{escape(shown)}]({url})" if is_web_url(url) else escape(shown)


class MarkdownGate:
    """Turns a stream of model deltas into safe Markdown, holding back only an
    unfinished link until it closes (or cannot be one)."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, delta: str) -> str:
        """The safe Markdown that `delta` releases (possibly empty)."""
        text = self._held + delta
        start = open_link_start(text)
        if start is not None:
            self._held = text[start:]
            return safe_markdown(text[:start])
        self._held = ""
        return safe_markdown(text)

    def flush(self) -> str:
        """Whatever is still held back, made safe: the stream is ending."""
        text, self._held = self._held, ""
        return safe_markdown(text)
