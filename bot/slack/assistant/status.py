"""The panel's loading status while a turn runs: which agent is working on the message.

`assistant.threads.setStatus` shows a line under the thread ("billing_agent is checking
your request…") until the app posts its reply in the thread (Slack clears it then) or
the status is cleared. A streamed reply is started with its first content, so the
line shows while the agents work and goes with the reply; a status sent after that (a
hand-off while the reply streams, a placeholder flow's status) is cleared explicitly.
The turn's events drive it (`run_turn(on_event=...)`): a transfer names the new agent,
an AgentTool call names the agent consulted. The runtime knows nothing of this; it
only yields its events.

Status calls never hold up the turn: they are sent from a background task, the latest
status wins, and a Slack failure only costs the status line (it is logged).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from slack_sdk.web.async_client import AsyncWebClient

from agents.events import Event
from bot.slack.assistant.describe import consulting_status, working_status

log = logging.getLogger(__name__)

# How long clearing the status may hold up the end of a turn; Slack drops a status by
# itself two minutes after it was set.
CLEAR_WAIT_S = 5.0
Status = tuple[str, list[str]]


class TurnStatus:
    """Follows one turn's events and shows the working agent; does nothing by default
    (a message outside the panel has no status line)."""

    def start(self) -> None:
        """Show the agent expected to take the message (after the thread's placeholder,
        when there is one: a message posted after the status clears it)."""

    def show(self, agent: str) -> None:
        """Show `agent` as the one working on the message."""

    def observe(self, event: Event) -> None:
        """Take one event of the turn into account."""

    def replied(self) -> None:
        """The turn's reply (or notice) was just posted as a new message in the thread."""

    async def close(self) -> None:
        """Clear the status once the turn's answer (or notice) is shown."""


class PanelStatus(TurnStatus):
    """The status line of one panel thread, kept up to date from the turn's events."""

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        channel_id: str,
        thread_ts: str,
        descriptions: Mapping[str, str],
        first_agent: str,
        after: asyncio.Task[None] | None = None,
    ) -> None:
        self._client = client
        # The thread's previous turn still clearing its line: sent first, so that late
        # clear never wipes this turn's status.
        self._after = after
        self._channel_id = channel_id
        self._thread_ts = thread_ts
        self._descriptions = descriptions
        self._first_agent = first_agent
        self._agent: str | None = None
        self._shown: str | None = None
        self._pending: Status | None = None
        self._sender: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.show(self._first_agent)

    def show(self, agent: str) -> None:
        self._agent = agent
        self._set(working_status(agent, self._descriptions.get(agent, "")))

    def observe(self, event: Event) -> None:
        target = event.actions.transfer_to_agent
        if target:
            self.show(target)
            return
        if event.author != self._agent and event.author in self._descriptions:
            # A workflow step (or a transfer back) speaks: it is the one working now.
            self._agent = event.author
        for call in event.function_calls:
            if call.name in self._descriptions and call.name != self._agent:
                self._set(consulting_status(self._agent or event.author, call.name))
        if event.function_responses and self._agent is not None:
            self.show(self._agent)

    def replied(self) -> None:
        # Slack cleared the line. A status still on its way may land after the reply,
        # so it stays to be cleared.
        if self._sender is None:
            self._shown = None

    async def close(self) -> None:
        if self._shown is None and self._sender is None:
            return
        self._set(("", []))
        sender = self._sender
        if sender is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(sender), CLEAR_WAIT_S)
        except TimeoutError:
            sender.cancel()
            log.warning("panel status not cleared in time; Slack drops it by itself")

    def _set(self, status: Status) -> None:
        if status[0] == self._shown and self._pending is None:
            return
        self._pending = status
        if self._sender is None:
            self._sender = asyncio.create_task(self._send())

    async def _send(self) -> None:
        try:
            if self._after is not None:
                await asyncio.wait({self._after})
                self._after = None
            while self._pending is not None:
                (text, lines), self._pending = self._pending, None
                if text == self._shown or (not text and self._shown is None):
                    continue  # already shown, or nothing to clear
                try:
                    await self._client.assistant_threads_setStatus(
                        channel_id=self._channel_id,
                        thread_ts=self._thread_ts,
                        status=text,
                        loading_messages=lines or None,
                    )
                    self._shown = text
                except Exception:
                    log.warning("panel status not set", exc_info=True)
        finally:
            self._sender = None
