"""Clicks on the feedback buttons under each AI reply (`render.blocks.feedback_block`).

A click names the reply's event in its block id, and Slack says which message the
button is on: the reply is looked up by that key, following any hand-off back to the
session it was posted in, and stored against the agent that wrote it, read from the
database, never from the payload (`storage.feedback`). Slack may deliver a click twice,
and several processes may each get a copy: the store keeps one row per person and
reply, so a copy is never counted. Each click goes through the person's rate.

`support_bot_feedback_total{agent,value}` counts people: one per person and reply, and
a change of mind moves it from one value to the other (a gauge whose changes each
process adds; summed over processes it is the stored count). Whoever owns the thread
marks as the customer, anyone else as staff.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncAck

from agents.metrics import REGISTRY
from bot.slack.message_ts import SLACK_TS
from bot.slack.render.blocks import FEEDBACK_ACTION, FEEDBACK_BLOCK_PREFIX
from bot.slack.services import BotServices
from bot.threads.admission import RateVerdict, UserRate
from storage.feedback import VALUES, FeedbackClick, FeedbackValue
from storage.threads import ThreadKey

log = logging.getLogger(__name__)

REGISTRY.describe(
    "support_bot_feedback_total",
    "gauge",
    "People's feedback on AI replies by the agent that wrote them (one per person and "
    "reply; a change of mind moves it)",
)

_EVENT_ID = re.compile(r"e[0-9]{1,12}")
_ID = re.compile(r"[A-Z0-9][A-Z0-9_]{0,31}")
_TS = re.compile(r"\d{1,12}\.\d{1,8}")


@dataclass(frozen=True)
class Click:
    """A feedback click as Slack delivered it, before it is resolved to its reply."""

    team_id: str
    channel_id: str
    thread_ts: str
    user_id: str
    event_id: str
    message_ts: str
    value: FeedbackValue


def parse_click(body: dict[str, Any]) -> Click | None:
    """The click in a `block_actions` payload, or None when it is not a well-formed
    click on one of the bot's feedback buttons."""
    actions = body.get("actions")
    action = _object(actions[0] if isinstance(actions, list) and actions else None)
    block_id, value = _text(action.get("block_id")), action.get("value")
    if action.get("action_id") != FEEDBACK_ACTION or value not in VALUES or block_id is None:
        return None
    if not block_id.startswith(FEEDBACK_BLOCK_PREFIX):
        return None
    container, user = _object(body.get("container")), _object(body.get("user"))
    team = _text(_object(body.get("team")).get("id") or user.get("team_id"), _ID)
    channel = _text(container.get("channel_id") or _object(body.get("channel")).get("id"), _ID)
    thread_ts = container.get("thread_ts") or _object(body.get("message")).get("thread_ts")
    click = Click(
        team_id=team or "",
        channel_id=channel or "",
        thread_ts=_text(thread_ts, _TS) or "",
        user_id=_text(user.get("id"), _ID) or "",
        event_id=_text(block_id.removeprefix(FEEDBACK_BLOCK_PREFIX), _EVENT_ID) or "",
        message_ts=_text(container.get("message_ts"), _TS) or "",
        value=value,
    )
    return click if all(dataclasses.astuple(click)) else None


async def store_click(services: BotServices, click: Click) -> str | None:
    """Store `click` against its reply's event and agent; what the store did, or None
    when the reply is not stored (its thread forgotten, or a forged button)."""
    db = services.db
    key = ThreadKey(team_id=click.team_id, channel_id=click.channel_id, thread_ts=click.thread_ts)
    thread = await db.threads.get(key)
    reply = None
    if thread is not None:
        reply = await db.feedback.reply(
            app_name=thread.app_name,
            user_id=thread.user_id,
            session_id=thread.session_id,
            event_id=click.event_id,
            message_ts=click.message_ts,
            ts_key=SLACK_TS,
        )
    if thread is None or reply is None:
        log.info("feedback on a reply that is not stored", extra={"slack_thread": click.thread_ts})
        return None
    staff = click.user_id != thread.user_id or click.user_id in services.settings.support_leads
    recorded = await db.feedback.record(
        FeedbackClick(
            team_id=click.team_id,
            channel_id=click.channel_id,
            thread_ts=click.thread_ts,
            session_id=reply.session_id,
            event_id=reply.event_id,
            agent=reply.agent,
            user_id=click.user_id,
            value=click.value,
            marker="staff" if staff else "customer",
        ),
        now=time.time(),
    )
    if recorded == "duplicate":
        REGISTRY.inc("support_bot_duplicate_deliveries_total", layer="feedback")
        return recorded
    REGISTRY.inc("support_bot_feedback_total", agent=reply.agent, value=click.value)
    if recorded == "changed":
        # The person's mark moves: their other value loses the one it had.
        other = next(v for v in VALUES if v != click.value)
        REGISTRY.inc("support_bot_feedback_total", -1, agent=reply.agent, value=other)
    return recorded


class FeedbackHandlers:
    """`on_feedback`, storing clicks through `services` in the background, within the
    users' shared rate."""

    def __init__(self, services: BotServices, rate: UserRate) -> None:
        self.services = services
        self.rate = rate

    async def on_feedback(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Ack a click at once; store it in the background unless its person is over
        their rate (a click over it is dropped: the buttons are no place for a notice)."""
        await ack()
        click = parse_click(body)
        if click is not None and not self.services.worker.closed:
            self.services.worker.spawn(self._store(click))

    async def _store(self, click: Click) -> None:
        if await self.rate.check(click.user_id) is RateVerdict.ALLOW:
            await store_click(self.services, click)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any, pattern: re.Pattern[str] | None = None) -> str | None:
    """`value` when it is a non-empty string (matching `pattern`), else None."""
    if not isinstance(value, str) or not value:
        return None
    return value if pattern is None or pattern.fullmatch(value) else None
