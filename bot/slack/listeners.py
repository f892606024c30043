"""Every Slack route the bot serves, registered in one place."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.response import BoltResponse

from agents.metrics import REGISTRY
from bot.slack import dm_conversation
from bot.slack.actions import REFUSAL, Reply, ThreadActions
from bot.slack.assistant import feedback, panel
from bot.slack.command_args import (
    CommandSyntaxError,
    ThreadRef,
    parse_handoff_args,
    parse_summary_args,
)
from bot.slack.conversation import SlackReplier, thread_key
from bot.slack.messages import parse_message
from bot.slack.render.blocks import BUSY_TEXT
from bot.slack.render.views import handoff_modal, home_view, refusal_modal
from bot.slack.services import BotServices
from bot.threads.admission import Priority, UserRate

log = logging.getLogger(__name__)

ArgsT = TypeVar("ArgsT")

SUMMARY_SHORTCUT = "summarize_thread"
HANDOFF_SHORTCUT = "handoff_thread"
HANDOFF_MODAL = "handoff_modal"


def register(app: AsyncApp, services: BotServices) -> None:
    """Attach all listeners. The app runs with `process_before_response=True`: each
    listener acks at once and hands slow work to `services.worker`, which keeps the
    task references and bounds concurrency."""
    thread_replier = SlackReplier(services)
    actions = ThreadActions(services)
    worker = services.worker
    settings = services.settings
    rate = UserRate(per_minute=settings.user_rate_per_minute, burst=settings.user_rate_burst)

    @app.middleware
    async def once_per_request(body: dict[str, Any], next: Any) -> BoltResponse | None:
        # Commands, shortcuts and view submissions carry a trigger id unique to the
        # request: a replayed (or redelivered) copy is acknowledged and dropped, by this
        # process and, through the database's deliveries, by every other one.
        trigger = body.get("trigger_id") if isinstance(body, dict) else None
        if isinstance(trigger, str) and not await first_request(trigger):
            return BoltResponse(status=200, body="")
        await next()
        return None

    async def first_request(trigger: str) -> bool:
        if not services.deliveries.first_request(trigger):
            return False
        key = f"request:{trigger}"
        if await services.db.deliveries.first_delivery(key, now=time.time()):
            return True
        REGISTRY.inc("support_bot_duplicate_deliveries_total", layer="database")
        return False

    async def on_message(
        body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        msg = parse_message(
            event,
            team_id=body.get("team_id") or context.team_id or "",
            bot_user_id=context.bot_user_id,
            bot_id=context.bot_id,
            answer_bots=services.settings.bot_answers_other_bots,
            event_id=body.get("event_id"),
        )
        if msg is None:
            return
        key = (msg.team_id, msg.channel, msg.root_ts)
        if not (msg.is_dm or msg.mentioned or worker.has_work(key)):
            # Unaddressed channel chatter: only an active thread's follow-ups are taken
            # (or one whose first message is still queued here), and nothing is written
            # for the rest.
            record = await services.db.threads.get(thread_key(msg))
            if record is None or record.status != "active":
                return
        delivery: dict[str, Any] = {"event_id": msg.event_id, "channel": msg.channel, "ts": msg.ts}
        if not services.deliveries.first(**delivery):
            return
        try:
            idle = settings.dm_conversation_idle_minutes
            msg, placement = await dm_conversation.place(services.db, msg, idle_minutes=idle)
            # Durable before the ack: a crash after this point loses nothing (bot.slack.recovery).
            accepted = await thread_replier.accept(msg, placement)
        except BaseException:
            # Answer 500 so Slack redelivers; the redelivery must not look like a duplicate.
            services.deliveries.forget(**delivery)
            raise
        if accepted is None:
            return
        msg = accepted
        key = (msg.team_id, msg.channel, msg.root_ts)
        # Shutting down: the message stays accepted and the next start-up answers it.
        if worker.closed:
            return
        if not worker.has_room(key) or not rate.allow(msg.user):
            worker.spawn(thread_replier.refuse_busy(msg))
            return
        worker.submit(key, lambda: thread_replier.handle(msg))

    # The panel's own events first; its threads' messages fall through to `on_message`.
    panel.register(app, services)
    app.event("app_mention")(on_message)
    app.event("message")(on_message)
    feedback.register(app, services)

    async def on_home(event: dict[str, Any]) -> None:
        user = event.get("user")
        if isinstance(user, str) and user:
            worker.spawn(services.client.views_publish(user_id=user, view=home_view()))

    app.event("app_home_opened")(on_home)

    def replier(respond: AsyncRespond) -> Reply:
        async def reply(text: str, blocks: list[dict[str, Any]] | None) -> None:
            await respond(
                text=text, blocks=blocks, response_type="ephemeral", replace_original=False
            )

        return reply

    async def admit(
        ack: AsyncAck, command: dict[str, Any], parse: Callable[[str], ArgsT], accepted: str
    ) -> tuple[str, str, ArgsT] | None:
        """Ack a slash command: its sender, its parsed arguments and the user's rate, each
        refused in the ack itself; None when refused."""
        team, user = _who(command)
        if team is None or user is None:
            await ack(text=INCOMPLETE_COMMAND)
            return None
        try:
            args = parse(command.get("text", ""))
        except CommandSyntaxError as exc:
            await ack(text=str(exc))
            return None
        if not rate.allow(user):
            await ack(text=BUSY_TEXT)
            return None
        await ack(text=accepted)
        return team, user, args

    async def on_summary(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        admitted = await admit(ack, command, parse_summary_args, "Summarising…")
        if admitted is None:
            return
        team, user, args = admitted
        worker.run(
            actions.summarize(
                team_id=team,
                user=user,
                ref=args.thread,
                public=args.public,
                reply=replier(respond),
            ),
            Priority.COMMAND,
        )

    async def on_handoff(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        admitted = await admit(ack, command, parse_handoff_args, "Handing off…")
        if admitted is None:
            return
        team, user, args = admitted
        worker.run(
            actions.handoff(
                team_id=team,
                user=user,
                ref=args.thread,
                person=args.person,
                agent=args.agent,
                note=args.note,
                reply=replier(respond),
            ),
            Priority.COMMAND,
        )

    async def on_new(ack: AsyncAck, command: dict[str, Any]) -> None:
        team, user = _who(command)
        channel = _text(command.get("channel_id"))
        if team is None or user is None or channel is None:
            await ack(text=INCOMPLETE_COMMAND)
        elif not channel.startswith("D"):
            await ack(text=dm_conversation.NEW_ONLY_IN_DM)
        else:
            await services.db.dm_conversations.end(team, channel)
            await ack(text=dm_conversation.NEW_STARTED)

    app.command("/summary")(on_summary)
    app.command("/handoff")(on_handoff)
    app.command("/new")(on_new)

    async def on_summary_shortcut(
        ack: AsyncAck, shortcut: dict[str, Any], respond: AsyncRespond
    ) -> None:
        await ack()
        where = _shortcut_thread(shortcut)
        if where is None:
            return
        team, user, ref = where
        reply = replier(respond)
        if not rate.allow(user):
            await reply(BUSY_TEXT, None)
            return
        worker.run(
            actions.summarize(team_id=team, user=user, ref=ref, public=False, reply=reply),
            Priority.COMMAND,
        )

    async def on_handoff_shortcut(
        ack: AsyncAck, shortcut: dict[str, Any], respond: AsyncRespond
    ) -> None:
        await ack()
        where = _shortcut_thread(shortcut)
        trigger = shortcut.get("trigger_id")
        if where is None or not isinstance(trigger, str):
            return
        team, user, ref = where
        if not rate.allow(user):
            await replier(respond)(BUSY_TEXT, None)
            return

        async def open_modal() -> None:
            # Authorise before showing anything: a refused user never sees agent names.
            if not await actions.authorised(user, ref.channel):
                view = refusal_modal(REFUSAL)
            else:
                meta = {"team": team, "channel": ref.channel, "thread_ts": ref.thread_ts}
                agents = actions.handoff_agents()
                view = handoff_modal(private_metadata=json.dumps(meta), agents=agents)
            await services.client.views_open(trigger_id=trigger, view=view)

        worker.run(open_modal(), Priority.COMMAND)

    app.shortcut(SUMMARY_SHORTCUT)(on_summary_shortcut)
    app.shortcut(HANDOFF_SHORTCUT)(on_handoff_shortcut)

    async def on_handoff_submit(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        values = _path(view, "state", "values")
        person = _text(_path(values, "person", "value", "selected_user"))
        agent = _text(_path(values, "agent", "value", "selected_option", "value"))
        note = _text(_path(values, "note", "value", "value")) or ""
        meta = _metadata(view.get("private_metadata"))
        user = _text(_path(body, "user", "id"))
        if meta is None or user is None:
            await ack()
            return
        if bool(person) == bool(agent):
            await ack(
                response_action="errors",
                errors={"person": "Pick either a person or an agent (not both)."},
            )
            return
        await ack()
        ref = ThreadRef(channel=meta["channel"], thread_ts=meta["thread_ts"])

        async def reply(text: str, blocks: list[dict[str, Any]] | None) -> None:
            await services.client.chat_postEphemeral(
                channel=ref.channel, user=user, thread_ts=ref.thread_ts, text=text, blocks=blocks
            )

        if not rate.allow(user):
            worker.spawn(reply(BUSY_TEXT, None))
            return
        worker.run(
            actions.handoff(
                team_id=meta["team"],
                user=user,
                ref=ref,
                person=person,
                agent=agent,
                note=note,
                reply=reply,
            ),
            Priority.COMMAND,
        )

    app.view(HANDOFF_MODAL)(on_handoff_submit)


INCOMPLETE_COMMAND = "That command arrived without its team or user, so I can't act on it."


def _path(data: Any, *keys: str) -> Any:
    """`data[k1][k2]...`, or None where any step is missing or not an object."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _who(command: dict[str, Any]) -> tuple[str | None, str | None]:
    return _text(command.get("team_id")), _text(command.get("user_id"))


def _metadata(raw: Any) -> dict[str, str] | None:
    """The modal's private metadata, if it is the object `on_handoff_shortcut` wrote."""
    try:
        meta = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    keys = ("team", "channel", "thread_ts")
    if not isinstance(meta, dict) or not all(_text(meta.get(k)) for k in keys):
        return None
    return {k: meta[k] for k in keys}


def _shortcut_thread(shortcut: dict[str, Any]) -> tuple[str, str, ThreadRef] | None:
    """(team, user, thread) of a message shortcut, or None when the payload lacks them."""
    team, user = _text(_path(shortcut, "team", "id")), _text(_path(shortcut, "user", "id"))
    channel = _text(_path(shortcut, "channel", "id"))
    ts = _text(_path(shortcut, "message", "thread_ts")) or _text(_path(shortcut, "message", "ts"))
    if team is None or user is None or channel is None or ts is None:
        return None
    return team, user, ThreadRef(channel=channel, thread_ts=ts)


__all__ = ["HANDOFF_MODAL", "HANDOFF_SHORTCUT", "SUMMARY_SHORTCUT", "register"]
