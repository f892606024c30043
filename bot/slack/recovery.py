"""The recovery sweep: finish the messages a dead process accepted but never answered.

A process killed mid-work (SIGKILL, OOM, power) leaves rows in `db.inflight`. The sweep
runs at start-up and then with every heartbeat (`bot.ops.heartbeat`), and takes over
the rows of owners that stopped beating (`storage.delivery.owners`). For each:

- never started (`accepted`): nothing reached the thread yet, so the message is queued
  again behind its thread and answered normally;
- started: the user's message is stored (appended here if the crash came first), and
  the thread gets exactly one answer: the reply, when the invocation had finished and
  only the posting was lost, otherwise "I was restarted before I could answer ... a
  person will follow up", and the thread is flagged. A placeholder that no longer says
  "thinking" means the answer landed before the crash, and nothing more is posted.
  A streamed reply (`bot.slack.streaming`) is finished in its own message: marked
  complete, it landed; otherwise its stream is stopped and the message rewritten with
  the reply or the notice, so the thread never gets a second one. A reply posted whole
  (no stream was started) is found by its invocation in its message's metadata.

A live owner's rows are never taken, however old: the takeover is one UPDATE guarded
by the owner's heartbeat. On SQLite the database has one owning process, so at start-up
every row left by another owner is an orphan and is taken at once.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agents.events import Event, Part
from agents.metrics import REGISTRY
from bot.slack.conversation import SlackReplier
from bot.slack.message_ts import OUTSIDE_THREAD, SLACK_TS, message_ts
from bot.slack.messages import IncomingMessage
from bot.slack.render.blocks import INTERRUPTED_TEXT, THINKING_TEXT
from bot.slack.reply_failures import ReplyFailures
from bot.slack.reply_posting import ReplyPosting
from bot.slack.services import BotServices
from bot.slack.streaming import SLACK_FAILURES, is_complete_reply
from bot.threads.speaker import SPEAKER_ID
from bot.threads.turn import TurnOutcome, close_interrupted_calls
from storage.delivery.inflight import InflightRecord
from storage.threads import ThreadKey, ThreadRecord

log = logging.getLogger(__name__)

REGISTRY.describe(
    "support_bot_recovered_messages_total",
    "counter",
    "Interrupted messages taken over from a dead process, by stage",
)

_THREAD_PAGE = 200


@dataclass
class RecoveryReport:
    """What the sweep found: messages queued again, and started ones it finishes."""

    requeued: int = 0
    resumed: int = 0


async def recover(
    services: BotServices, *, now: float | None = None, startup: bool = False
) -> RecoveryReport:
    """Take over dead owners' in-flight messages and queue their work on `services.worker`.

    At start-up (`startup`), call before serving events, so that re-run messages keep
    their place ahead of new ones in the same thread.
    """
    db, report = services.db, RecoveryReport()
    now = time.time() if now is None else now
    dead_after: float | None = services.settings.owner_dead_after_seconds
    if startup and db.gate.is_sqlite:
        dead_after = None
    rows = await db.inflight.left_by_others(services.owner, now=now, dead_after=dead_after)
    replier = SlackReplier(services)
    resumer = Resumer(services, replier.posting, replier.failures)
    for row in rows:
        taken = await db.inflight.take_over(
            row, owner=services.owner, now=now, dead_after=dead_after
        )
        if not taken:
            continue
        msg = IncomingMessage.from_record(row.message)
        key = (row.team_id, row.channel_id, row.thread_ts)
        if row.stage == "accepted":
            services.worker.submit(key, partial(replier.handle, msg))
            report.requeued += 1
        else:
            services.worker.submit(key, partial(resumer.resume, row))
            report.resumed += 1
    if rows:
        REGISTRY.inc("support_bot_recovered_messages_total", report.requeued, stage="accepted")
        REGISTRY.inc("support_bot_recovered_messages_total", report.resumed, stage="started")
        log.warning("recovering interrupted messages", extra=report.__dict__)
    return report


class Resumer:
    """Finishes one started-but-unanswered message after a crash."""

    def __init__(
        self, services: BotServices, posting: ReplyPosting, failures: ReplyFailures
    ) -> None:
        self.services = services
        self.posting = posting
        self.failures = failures

    async def resume(self, row: InflightRecord) -> None:
        """Give the thread of `row` its one answer: none when it landed before the
        crash, else the stored reply or the "interrupted" notice, in its message."""
        db = self.services.db
        key = ThreadKey(team_id=row.team_id, channel_id=row.channel_id, thread_ts=row.thread_ts)
        record = await db.threads.get(key)
        events = await self._events_with_user_message(record, row)
        landed, message_ts = await self._reply_message(key, row)
        if landed:
            # The answer (or a notice) was in its message before the crash.
            await db.inflight.finish(row.key, owner=self.services.owner)
            return
        outcome = TurnOutcome.of_invocation(events, row.invocation_id)
        broadcast = IncomingMessage.from_record(row.message).shown_in_dm
        if outcome.answered:
            await self.posting.conclude(
                key, row.key, message_ts, outcome, broadcast=broadcast, record=record
            )
            return
        if record is not None:
            await close_interrupted_calls(db, record)
        await self.failures.fail(
            key, row.key, message_ts, "interrupted", INTERRUPTED_TEXT, broadcast=broadcast
        )

    async def _events_with_user_message(
        self, record: ThreadRecord | None, row: InflightRecord
    ) -> list[Event]:
        """The thread's session events, after storing the user's message if the crash
        beat it."""
        db = self.services.db
        if record is None:
            return []
        session = await db.sessions.ensure_of_thread(record)
        events: list[Event] = list(session.events)
        if not any(e.author == "user" and message_ts(e) == row.message_ts for e in events):
            text = str(row.message.get("text", ""))
            stored = await db.sessions.append_event(
                session,
                Event(
                    author="user",
                    invocation_id=row.invocation_id or "recovered",
                    parts=(Part(text=text),),
                    custom_metadata=_user_metadata(row),
                ),
            )
            events.append(stored)
        return events

    async def _thread_messages(self, key: ThreadKey, around: str) -> list[dict[str, Any]]:
        try:
            resp = await self.services.client.conversations_replies(
                channel=key.channel_id,
                ts=key.thread_ts,
                oldest=around,
                inclusive=True,
                limit=_THREAD_PAGE,
                include_all_metadata=True,
            )
        except SlackApiError as exc:
            log.info("thread not readable: %s", exc.response.get("error"))
            return []
        return list(resp.get("messages") or [])

    async def _message(self, key: ThreadKey, ts: str) -> dict[str, Any] | None:
        """Our message `ts` as it is now (with its metadata), or None when it is gone."""
        for message in await self._thread_messages(key, ts):
            if message.get("ts") == ts:
                return message
        return None

    async def _reply_message(self, key: ThreadKey, row: InflightRecord) -> tuple[bool, str | None]:
        """(whether the answer already landed, the message to finish it in, if any).

        A placeholder that no longer says "thinking" holds the answer; a streamed reply
        holds it when it is marked complete, and an abandoned stream is stopped so that
        its message can be rewritten. A message that is gone was deleted for a reply
        posted anew under its owner's name (`bot.slack.reply_posting`), which the crash
        may have beaten or not: looked for as when no message was recorded.
        """
        if row.stream_ts is not None:
            message = await self._message(key, row.stream_ts)
            if message is None:
                return await self._untracked(key, row)
            if is_complete_reply(message):
                return True, row.stream_ts
            await _stop_abandoned(self.services.client, key.channel_id, row.stream_ts)
            return False, row.stream_ts
        if row.placeholder_ts is None:
            return await self._untracked(key, row)
        message = await self._message(key, row.placeholder_ts)
        if message is None:
            return await self._untracked(key, row)
        return str(message.get("text") or "") != THINKING_TEXT, row.placeholder_ts

    async def _untracked(self, key: ThreadKey, row: InflightRecord) -> tuple[bool, str | None]:
        """What a message with no reply message recorded left in the thread, after the
        user's: the complete reply of its invocation, posted whole before the kill beat
        the finish (it landed); else a "thinking" message whose ts the kill beat."""
        later = [
            message
            for message in await self._thread_messages(key, row.message_ts)
            if message.get("bot_id") and float(message.get("ts", 0)) > float(row.message_ts)
        ]
        for message in later:
            if row.invocation_id and is_complete_reply(message, row.invocation_id):
                return True, str(message["ts"])
        for message in later:
            if message.get("text") == THINKING_TEXT:
                return False, str(message["ts"])
        return False, None


async def _stop_abandoned(client: AsyncWebClient, channel: str, ts: str) -> None:
    """Stop a stream a dead process left open, so that its message can be rewritten; a
    stream Slack already ended answers an error, which is fine. Never raises.

    The one stream call not made through slack_sdk's `AsyncChatStream`
    (`bot.slack.streaming`): a helper only stops the stream it started, and this one's
    helper died with its process."""
    try:
        await client.chat_stopStream(channel=channel, ts=ts)
    except SLACK_FAILURES as exc:
        log.info("abandoned stream not stopped: %s", type(exc).__name__)


def _user_metadata(row: InflightRecord) -> dict[str, Any]:
    """The recovered user event's metadata: its Slack ts, where it is and who sent it."""
    metadata: dict[str, Any] = {SLACK_TS: row.message_ts}
    mark = IncomingMessage.from_record(row.message).outside_mark
    if mark:
        metadata[OUTSIDE_THREAD] = mark
    speaker = row.message.get("user")
    if isinstance(speaker, str) and speaker:
        metadata[SPEAKER_ID] = speaker
    return metadata
