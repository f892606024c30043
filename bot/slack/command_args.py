"""Parsing the arguments of `/summary` and `/handoff`: thread links, people, agents.

Error messages are mrkdwn: a literal `<` or `>` in them is escaped, or Slack would parse
`<thread link>` as markup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, urlparse

from bot.slack.render.mrkdwn import escape

_ARCHIVE = re.compile(r"/archives/([CDG][A-Z0-9]+)/p(\d{10})(\d{6})$")
_USER = re.compile(r"^<@([UW][A-Z0-9]+)(?:\|[^>]*)?>$")
_AGENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CommandSyntaxError(ValueError):
    """The command's arguments could not be understood; the message says how to fix it."""


@dataclass(frozen=True)
class ThreadRef:
    """A thread named by a link: its channel and its root message ts."""

    channel: str
    thread_ts: str


def parse_thread_link(text: str) -> ThreadRef:
    """The thread a Slack message link points to (its root when the link has `thread_ts`)."""
    raw = text.strip().strip("<>").split("|", 1)[0]
    url = urlparse(raw)
    match = _ARCHIVE.search(url.path)
    if url.scheme not in ("http", "https") or match is None:
        raise CommandSyntaxError("That isn't a Slack message link. Use *Copy link* on a message.")
    channel, secs, micros = match.groups()
    thread_ts = parse_qs(url.query).get("thread_ts", [f"{secs}.{micros}"])[0]
    if not re.fullmatch(r"\d{10}\.\d{6}", thread_ts):
        raise CommandSyntaxError("That link has an invalid thread timestamp.")
    return ThreadRef(channel=channel, thread_ts=thread_ts)


@dataclass(frozen=True)
class SummaryArgs:
    """`/summary`'s arguments: the thread, and whether to post the summary in it."""

    thread: ThreadRef
    public: bool


def parse_summary_args(text: str) -> SummaryArgs:
    """`<thread link> [public]`."""
    words = text.split()
    if not words or len(words) > 2 or (len(words) == 2 and words[1].lower() != "public"):
        raise CommandSyntaxError("Usage: `/summary &lt;thread link&gt; [public]`")
    return SummaryArgs(thread=parse_thread_link(words[0]), public=len(words) == 2)


@dataclass(frozen=True)
class HandoffArgs:
    """`/handoff`'s arguments: the thread, a person or an agent, and an optional note."""

    thread: ThreadRef
    person: str | None
    agent: str | None
    note: str


def parse_handoff_args(text: str) -> HandoffArgs:
    """`<thread link> <@person | agent_name> [note]`."""
    words = text.split(maxsplit=2)
    if len(words) < 2:
        raise CommandSyntaxError(
            "Usage: `/handoff &lt;thread link&gt; &lt;@person | agent_name&gt; [note]`"
        )
    thread = parse_thread_link(words[0])
    note = words[2].strip() if len(words) == 3 else ""
    target = words[1]
    if (user := _USER.match(target)) is not None:
        return HandoffArgs(thread=thread, person=user.group(1), agent=None, note=note)
    if target.startswith("@") or target.startswith("<"):
        raise CommandSyntaxError("Pick the person from the @-mention list so Slack sends their id.")
    if _AGENT.match(target) is None:
        raise CommandSyntaxError(f"`{escape(target)}` is neither a person nor an agent name.")
    return HandoffArgs(thread=thread, person=None, agent=target, note=note)
