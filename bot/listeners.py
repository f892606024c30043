"""Every Slack route the bot serves, registered in one place."""

from __future__ import annotations

import json
import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_bolt.context.async_context import AsyncBoltContext

from bot.commands import ThreadActions
from bot.conversation import Conversation
from bot.messages import parse_message
from bot.services import BotServices
from bot.slack_ui import handoff_modal, home_view
from bot.thread_links import (
    CommandSyntaxError,
    ThreadRef,
    parse_handoff_args,
    parse_summary_args,
)

log = logging.getLogger(__name__)

SUMMARY_SHORTCUT = "summarize_thread"
HANDOFF_SHORTCUT = "handoff_thread"
HANDOFF_MODAL = "handoff_modal"


def register(app: AsyncApp, services: BotServices) -> None:
    """Attach all listeners. The app runs with `process_before_response=True`: each
    listener acks at once and hands slow work to `services.worker`, which keeps the
    task references and bounds concurrency."""
    conversation = Conversation(services)
    actions = ThreadActions(services)
    worker = services.worker

    async def on_message(
        body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        msg = parse_message(
            event,
            team_id=body.get("team_id") or context.team_id or "",
            bot_user_id=context.bot_user_id or services.bot_user_id,
            bot_id=context.bot_id,
            answer_bots=services.settings.bot_answers_other_bots,
            event_id=body.get("event_id"),
        )
        if msg is None:
            return
        delivery: dict[str, Any] = {"event_id": msg.event_id, "channel": msg.channel, "ts": msg.ts}
        if not services.deliveries.first(**delivery):
            return
        try:
            # Durable before the ack: a crash after this point loses nothing (bot.recovery).
            accepted = await conversation.accept(msg)
        except BaseException:
            # Answer 500 so Slack redelivers; the redelivery must not look like a duplicate.
            services.deliveries.forget(**delivery)
            raise
        if not accepted:
            return
        # Shutting down: the message stays accepted and the next start-up answers it.
        if not worker.closed:
            worker.submit((msg.team_id, msg.channel, msg.root_ts), lambda: conversation.handle(msg))

    app.event("app_mention")(on_message)
    app.event("message")(on_message)

    async def on_home(event: dict[str, Any]) -> None:
        worker.spawn(services.client.views_publish(user_id=event["user"], view=home_view()))

    app.event("app_home_opened")(on_home)

    def replier(respond: AsyncRespond) -> Any:
        async def reply(text: str, blocks: list[dict[str, Any]] | None) -> None:
            await respond(
                text=text, blocks=blocks, response_type="ephemeral", replace_original=False
            )

        return reply

    async def on_summary(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        try:
            args = parse_summary_args(command.get("text", ""))
        except CommandSyntaxError as exc:
            await ack(text=str(exc))
            return
        await ack(text="Summarising…")
        worker.spawn(
            actions.summarize(
                team_id=command["team_id"],
                user=command["user_id"],
                ref=args.thread,
                public=args.public,
                reply=replier(respond),
            )
        )

    async def on_handoff(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        try:
            args = parse_handoff_args(command.get("text", ""))
        except CommandSyntaxError as exc:
            await ack(text=str(exc))
            return
        await ack(text="Handing off…")
        worker.spawn(
            actions.handoff(
                team_id=command["team_id"],
                user=command["user_id"],
                ref=args.thread,
                person=args.person,
                agent=args.agent,
                note=args.note,
                reply=replier(respond),
            )
        )

    app.command("/summary")(on_summary)
    app.command("/handoff")(on_handoff)

    async def on_summary_shortcut(
        ack: AsyncAck, shortcut: dict[str, Any], respond: AsyncRespond
    ) -> None:
        await ack()
        worker.spawn(
            actions.summarize(
                team_id=shortcut["team"]["id"],
                user=shortcut["user"]["id"],
                ref=_shortcut_thread(shortcut),
                public=False,
                reply=replier(respond),
            )
        )

    async def on_handoff_shortcut(ack: AsyncAck, shortcut: dict[str, Any]) -> None:
        await ack()
        ref = _shortcut_thread(shortcut)
        meta = {"team": shortcut["team"]["id"], "channel": ref.channel, "thread_ts": ref.thread_ts}
        view = handoff_modal(private_metadata=json.dumps(meta), agents=actions.handoff_agents())
        worker.spawn(services.client.views_open(trigger_id=shortcut["trigger_id"], view=view))

    app.shortcut(SUMMARY_SHORTCUT)(on_summary_shortcut)
    app.shortcut(HANDOFF_SHORTCUT)(on_handoff_shortcut)

    async def on_handoff_submit(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        values = view["state"]["values"]
        person = values.get("person", {}).get("value", {}).get("selected_user")
        agent_opt = values.get("agent", {}).get("value", {}).get("selected_option")
        agent = agent_opt["value"] if agent_opt else None
        note = values.get("note", {}).get("value", {}).get("value") or ""
        if bool(person) == bool(agent):
            await ack(
                response_action="errors",
                errors={"person": "Pick either a person or an agent (not both)."},
            )
            return
        await ack()
        meta = json.loads(view["private_metadata"])
        ref = ThreadRef(channel=meta["channel"], thread_ts=meta["thread_ts"])
        user = body["user"]["id"]

        async def reply(text: str, blocks: list[dict[str, Any]] | None) -> None:
            await services.client.chat_postEphemeral(
                channel=ref.channel, user=user, thread_ts=ref.thread_ts, text=text, blocks=blocks
            )

        worker.spawn(
            actions.handoff(
                team_id=meta["team"],
                user=user,
                ref=ref,
                person=person,
                agent=agent,
                note=note,
                reply=reply,
            )
        )

    app.view(HANDOFF_MODAL)(on_handoff_submit)


def _shortcut_thread(shortcut: dict[str, Any]) -> ThreadRef:
    message = shortcut["message"]
    return ThreadRef(
        channel=shortcut["channel"]["id"], thread_ts=message.get("thread_ts") or message["ts"]
    )


__all__ = ["HANDOFF_MODAL", "HANDOFF_SHORTCUT", "SUMMARY_SHORTCUT", "register"]
