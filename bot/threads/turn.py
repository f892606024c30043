"""One turn of a thread, whatever the transport: the thread and its session, the
runner, and what the invocation produced.

Slack (`bot.slack.conversation`), its start-up recovery (`bot.slack.recovery`) and the
terminal chat (`bot.terminal.chat`) all answer a message this way; each then shows the
`TurnOutcome` its own way (a placeholder replaced with Block Kit, a printed line).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.events import Event, interrupted_responses
from agents.runner import Runner
from agents.sessions.service import TransactionWrite
from bot.threads.speaker import SPEAKER_ID
from storage.database import Database
from storage.threads import ThreadKey, ThreadRecord


@dataclass
class TurnOutcome:
    """What one invocation produced, reduced to what a thread shows: the reply (or the
    error), and the agents the conversation passed through (`path`)."""

    reply: Event | None = None
    error: Event | None = None
    path: list[str] = field(default_factory=list)

    def observe(self, event: Event) -> None:
        """Take one event of the invocation into account (a partial one is only shown)."""
        if event.partial:
            return
        if event.author != "user" and not self.path:
            self.path.append(event.author)
        target = event.actions.transfer_to_agent
        if target and (not self.path or self.path[-1] != target):
            self.path.append(target)
        if event.error_code:
            self.error = event
        elif event.author != "user" and event.is_final_response() and event.text:
            self.reply = event

    @classmethod
    def of_invocation(cls, events: Iterable[Event], invocation_id: str | None) -> TurnOutcome:
        """The outcome rebuilt from a session's stored events of one invocation."""
        outcome = cls()
        for event in events:
            if event.invocation_id == invocation_id and event.author != "user":
                outcome.observe(event)
        return outcome

    @property
    def answered(self) -> bool:
        """True when the invocation ended in a reply and no error."""
        return self.error is None and self.reply is not None

    @property
    def failure(self) -> str:
        """Why there is no answer: the error event's code, or `no_reply`."""
        if self.error is not None:
            return self.error.error_code or "error"
        return "no_reply"

    @property
    def transfers(self) -> list[str]:
        """The path when the conversation changed hands, else empty."""
        return self.path if len(self.path) > 1 else []


async def ensure_thread(
    db: Database,
    key: ThreadKey,
    record: ThreadRecord | None,
    *,
    new_session_id: str,
    app_name: str,
    user_id: str,
    has_session: bool = False,
) -> ThreadRecord:
    """The thread, active, with its session: mapped to `new_session_id` on its first
    message; a handed-off (or closed) thread comes back to the bot. `has_session`: the
    read that gave `record` saw its session stored, so it is not looked up again."""
    if record is None:
        record = await db.threads.create(
            key,
            session_id=new_session_id,
            app_name=app_name,
            user_id=user_id,
            empty_session=True,
            now=time.time(),
        )
        if record.session_id == new_session_id:
            # Mapped just now, its session created in the same transaction.
            return record
        # Another writer mapped the thread first: its session may not be written yet.
    elif record.status != "active":
        await db.threads.set_status(key, "active")
        record = record.model_copy(update={"status": "active"})
    if not has_session:
        await db.sessions.ensure_exists(record)
    return record


async def close_interrupted_calls(db: Database, record: ThreadRecord) -> int:
    """Answer every tool call in the thread's session that a kill or a cancel left
    without a result (`agents.events.interrupted_responses`), so compaction resumes;
    returns how many events were added."""
    session = await db.sessions.of_thread(record)
    if session is None:
        return 0
    closing = interrupted_responses(session.events)
    for event in closing:
        await db.sessions.append_event(session, event)
    return len(closing)


async def run_turn(
    runner: Runner,
    *,
    user_id: str,
    session_id: str,
    text: str,
    invocation_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    speaker: str | None = None,
    on_event: Callable[[Event], None] | None = None,
    listener: Callable[[Event], Awaitable[None]] | None = None,
    with_user_event: TransactionWrite | None = None,
) -> TurnOutcome:
    """Run `text` through the runner in the session and collect the outcome.

    `metadata` is the transport's data for this invocation (the runner's `custom_metadata`,
    read by its plugins): Slack passes its message ids, which `SlackTsPlugin` records on the
    events for citations; the terminal passes nothing. `speaker` is the id of the person
    who sent `text` (which may not be the session's `user_id`), recorded on the user
    event by `SpeakerPlugin`. A `listener` sees every event as it comes, the partial
    ones of the streamed reply text too (`Runner.run_async(streaming=True)`);
    `on_event` sees each whole event as the runner yields it (Slack's panel shows the
    working agent from them). `with_user_event` is a write stored in the transaction
    that stores the user's event (`Runner.run_async`): Slack marks its message started
    there.
    """
    custom = dict(metadata or {})
    if speaker:
        custom[SPEAKER_ID] = speaker
    outcome = TurnOutcome()
    async for event in runner.run_async(
        user_id=user_id,
        session_id=session_id,
        message=text,
        custom_metadata=custom,
        invocation_id=invocation_id,
        streaming=listener is not None,
        with_user_event=with_user_event,
    ):
        if listener is not None:
            await listener(event)
        outcome.observe(event)
        if on_event is not None:
            on_event(event)
    return outcome
