"""The context line under a reply that used the knowledge base, and the line under a
thread's summary (digest, `/summary`, hand-off) listing what its replies cited: each
section's title and heading, linked to its document's URL when it has a web one. Pure,
no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.knowledge.reply_check import source_label
from agents.knowledge.thread_sources import HEADING, ThreadSources, more_text
from bot.slack.render.limits import CONTEXT_TEXT, Block, context
from bot.slack.render.links import is_web_url
from bot.slack.render.mrkdwn import escape

SOURCES_LABEL = "Sources"
# A context block holds at most 10 elements; a reply cites a few sections, never more.
MAX_SOURCES = 9


def sources_blocks(sources: Sequence[Mapping[str, Any]]) -> list[Block]:
    """The sources line (none for a reply that cites nothing)."""
    if not sources:
        return []
    shown = [_source(s) for s in sources[:MAX_SOURCES]]
    return [context(f"*{SOURCES_LABEL}:* " + "  ·  ".join(shown))]


def thread_sources_blocks(sources: ThreadSources) -> list[Block]:
    """The documentation a thread's replies cited, as one context line (none when they
    cited nothing); a source that would not fit Slack's limit is counted with the rest."""
    if not sources.shown:
        return []
    cited = len(sources.shown) + sources.more
    shown: list[str] = []
    for source in sources.shown:
        longer = [*shown, _source(source)]
        if len(_cited_line(longer, cited - len(longer))) > CONTEXT_TEXT:
            break
        shown = longer
    return [context(_cited_line(shown, cited - len(shown)))]


def _cited_line(shown: list[str], more: int) -> str:
    return f"*{HEADING}:* " + "  ·  ".join(filter(None, [*shown, more_text(more)]))


def _source(source: Mapping[str, Any]) -> str:
    label = escape(source_label(source))
    url = source.get("url")
    if isinstance(url, str) and is_web_url(url) and not any(c in url for c in "<>| \n"):
        return f"<{url}|{label.replace('|', '/')}>"
    return label
