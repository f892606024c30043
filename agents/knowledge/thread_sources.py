"""The documentation a thread's replies cited, for what summarises a thread (digests,
`/summary`, hand-offs): read from the stored reply events (`custom_metadata`, written
when each reply was checked), never from a model, so a summary cannot invent a source.

Each section is listed once, in the order the replies first cited it, at most
`MAX_SHOWN`, then how many more. Deleting a thread's events (`forget`) deletes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.events import Event
from agents.knowledge.reply_check import reply_sources, source_label

MAX_SHOWN = 5
"""The most sources a summary lists; the rest are counted ("and 3 more")."""
HEADING = "Documentation the replies cited"


@dataclass(frozen=True)
class ThreadSources:
    """The first cited sections (`shown`, each a reply's citation: id, title, heading,
    url) and how many more were cited."""

    shown: tuple[Mapping[str, Any], ...] = ()
    more: int = 0


def thread_sources(events: Sequence[Event], *, limit: int = MAX_SHOWN) -> ThreadSources:
    """The sections the agents' replies among `events` cite, each once (by id)."""
    cited: dict[str, Mapping[str, Any]] = {}
    for event in events:
        if event.author == "user" or event.partial:
            continue
        for source in reply_sources(event.custom_metadata):
            cited.setdefault(source["id"], source)
    found = list(cited.values())
    return ThreadSources(shown=tuple(found[:limit]), more=max(0, len(found) - limit))


def more_text(more: int) -> str:
    """ "and 3 more" (empty for none)."""
    return f"and {more} more" if more else ""


def sources_text(sources: ThreadSources) -> str:
    """The sources as plain lines, each "Title › heading <url>" (empty when none)."""
    if not sources.shown:
        return ""
    lines = [f"{HEADING}:"]
    for source in sources.shown:
        url = source.get("url")
        # A URL is one word: one with spaces or line breaks would add lines of its own.
        word = isinstance(url, str) and url.split() == [url]
        lines.append(f"- {source_label(source)}" + (f" <{url}>" if word else ""))
    if sources.more:
        lines.append(f"- {more_text(sources.more)}")
    return "\n".join(lines)
