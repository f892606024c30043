"""Links to Slack threads and to the exact messages a summary cites."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agents.events import Event
from bot.slack.message_ts import message_ts, outside_thread, own_thread


class SlackAnswer(Protocol):
    """A Web API answer (slack_sdk's `AsyncSlackResponse`, or a plain dict)."""

    def __getitem__(self, key: str) -> Any: ...


class PermalinkClient(Protocol):
    """The part of slack_sdk's `AsyncWebClient` that links threads."""

    async def chat_getPermalink(self, *, channel: str, message_ts: str) -> SlackAnswer: ...


@dataclass(frozen=True)
class ThreadLinks:
    """The thread's permalink, and links to any message in it built from that permalink."""

    channel: str
    thread_ts: str
    thread_link: str

    def message_link(self, ts: str, *, in_thread: bool = True, thread_ts: str | None = None) -> str:
        """A link to the message `ts`: in the thread (or in `thread_ts`, another Slack
        thread it is in), unless `in_thread` is False (a top-level DM message that
        continued the conversation) or it is the thread's root."""
        base = self.thread_link.split("?", 1)[0].rsplit("/p", 1)[0]
        link = f"{base}/p{ts.replace('.', '')}"
        thread = thread_ts or (self.thread_ts if in_thread else None)
        if thread is None or ts == thread:
            return link
        return f"{link}?thread_ts={thread}&cid={self.channel}"

    def link_for(self, event: Event) -> str | None:
        """A link to the Slack message `event` came from or was posted as, if any."""
        ts = message_ts(event)
        if not ts:
            return None
        return self.message_link(
            ts, in_thread=not outside_thread(event), thread_ts=own_thread(event)
        )

    def shown_link_for(self, events: Sequence[Event]) -> Callable[[Event], str | None]:
        """`link_for`, but only for events whose own text is what their message shows:
        a user's message, and the one reply of each invocation. Every other event of an
        invocation (a workflow step such as `diagnose`, a tool call, a failed turn whose
        message shows a notice) shares the reply's message but not its text, so it
        carries no link rather than a link to words it did not write."""
        shown = shown_event_ids(events)
        return lambda event: self.link_for(event) if event.id in shown else None


def shown_event_ids(events: Sequence[Event]) -> set[str]:
    """Ids of the events whose text is exactly what their Slack message shows."""
    shown: set[str] = set()
    replies: dict[str, str] = {}
    failed: set[str] = set()  # invocations whose message shows a failure notice instead
    for event in events:
        if event.author == "user":
            if message_ts(event):
                shown.add(event.id)
        elif event.error_code:
            failed.add(event.invocation_id)
        elif message_ts(event) and event.is_final_response() and event.text:
            replies[event.invocation_id] = event.id  # the last one is what was posted
    return shown | {e for inv, e in replies.items() if inv not in failed}


async def thread_links(client: PermalinkClient, channel: str, thread_ts: str) -> ThreadLinks:
    """One `chat.getPermalink` call for the thread root; message links derive from it."""
    answer = await client.chat_getPermalink(channel=channel, message_ts=thread_ts)
    return ThreadLinks(channel=channel, thread_ts=thread_ts, thread_link=str(answer["permalink"]))
