"""The Agents & AI Apps side panel, through Bolt's `AsyncAssistant`.

A panel thread is a thread of the user's direct conversation with the app. Opening one
(`assistant_thread_started`) gives it a title and one suggested prompt per specialist
of the tree. A message in it is an ordinary `message.im` event: the assistant has no
user-message listener, so Bolt passes the message on to the bot's own message listener,
and the thread is a session like any other (same storage, digests, `/summary` and
`/handoff`). While a turn runs, the panel shows the working agent as its loading status
(`bot.slack.assistant.status`).
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import Any

from slack_bolt.context.set_suggested_prompts.async_set_suggested_prompts import (
    AsyncSetSuggestedPrompts,
)
from slack_bolt.context.set_title.async_set_title import AsyncSetTitle

from agents.runner import resumable
from bot.slack.assistant.describe import agent_descriptions, suggested_prompts, thread_title
from bot.slack.assistant.status import PanelStatus, TurnStatus
from bot.slack.messages import IncomingMessage
from bot.slack.services import BotServices
from bot.threads.worker import WorkerClosedError
from storage.threads import ThreadRecord

log = logging.getLogger(__name__)

PROMPTS_TITLE = "Ask a specialist"


def is_panel_message(msg: IncomingMessage) -> bool:
    """A message in a panel thread: a direct message inside a thread (Bolt's own test
    for an assistant thread's user message)."""
    return msg.is_dm and msg.thread_ts is not None


class Panel:
    """The panel's side of each turn: a loading status for panel messages only."""

    def __init__(self, services: BotServices) -> None:
        self._services = services
        self._descriptions = agent_descriptions(services.runner.agent)
        self._clearing: dict[tuple[str, str], asyncio.Task[None]] = {}

    def status_for(self, msg: IncomingMessage, record: ThreadRecord) -> TurnStatus:
        """The status line of `msg`'s thread, or one that shows nothing outside the panel."""
        if not is_panel_message(msg):
            return TurnStatus()
        return PanelStatus(
            self._services.client,
            channel_id=msg.channel,
            thread_ts=msg.root_ts,
            descriptions=self._descriptions,
            first_agent=self._first_agent(record),
            after=self._clearing.get((msg.channel, msg.root_ts)),
        )

    def clear_later(self, msg: IncomingMessage, status: TurnStatus) -> None:
        """Clear the turn's status line in the background, once its answer is shown.

        Clearing is a Slack round trip (up to `CLEAR_WAIT_S` on a loaded machine), not
        model work, so the turn gives its slot of the shared limit back without waiting
        for it; the thread's next status line is sent after it.
        """
        if not isinstance(status, PanelStatus):
            return
        key = (msg.channel, msg.root_ts)
        try:
            task = self._services.worker.spawn(status.close())
        except WorkerClosedError:
            return  # shutting down: Slack drops the status by itself
        self._clearing[key] = task
        task.add_done_callback(partial(self._cleared, key))

    def _cleared(self, key: tuple[str, str], task: asyncio.Task[None]) -> None:
        if self._clearing.get(key) is task:
            del self._clearing[key]

    def _first_agent(self, record: ThreadRecord) -> str:
        """The agent expected to take the thread's next message, from the thread map
        alone (no session read on the hot path): the agent that answered last, when it
        keeps the conversation, else the root. The turn's own events correct it."""
        root = self._services.runner.agent
        owner = root.find_agent(record.owner_agent) if record.owner_agent else None
        return owner.name if owner is not None and resumable(owner) else root.name


class PanelThreads:
    """The panel's thread listeners, `on_thread_started` and `on_context_changed`, with
    the prompts and title the tree gives."""

    def __init__(self, services: BotServices) -> None:
        self.services = services
        root = services.runner.agent
        self.prompts = suggested_prompts(root)
        self.title = thread_title(root)

    async def on_thread_started(
        self, set_title: AsyncSetTitle, set_suggested_prompts: AsyncSetSuggestedPrompts
    ) -> None:
        """Title a new panel thread and offer one prompt per specialist."""
        # Acked at once; the Slack calls run in the background like every other reply
        # (none once shutting down: the thread just opens without its prompts).
        if not self.services.worker.closed:
            self.services.worker.spawn(self._greet(set_title, set_suggested_prompts))

    async def _greet(
        self, set_title: AsyncSetTitle, set_suggested_prompts: AsyncSetSuggestedPrompts
    ) -> None:
        try:
            await set_title(self.title)
            if self.prompts:
                await set_suggested_prompts(prompts=self.prompts, title=PROMPTS_TITLE)
        except Exception:
            log.warning("panel thread not set up", exc_info=True)

    async def on_context_changed(self, event: dict[str, Any]) -> None:
        """Note the channel the user now looks at, and keep nothing."""
        # The bot answers from the conversation alone and reads no channel it was not
        # addressed in, so it keeps nothing; this listener also replaces Bolt's default,
        # which would rewrite the thread's first bot message to store the context in
        # its metadata.
        log.debug("panel context changed", extra={"slack_thread": _thread_ts(event)})


def _thread_ts(event: dict[str, Any]) -> str | None:
    thread = event.get("assistant_thread")
    ts = thread.get("thread_ts") if isinstance(thread, dict) else None
    return ts if isinstance(ts, str) else None
