"""Message shortcuts and the hand-off modal: "Summarise thread", "Hand off thread",
and the modal's submission.

Each acks at once. The hand-off modal opens at once, outside the model limit, as a
"checking" view that becomes the modal once the requester is authorised (a refused user
never sees agent names); its submission is checked in the ack (a
person or an agent, not both) and handed off in `services.worker`.
"""

from __future__ import annotations

import json
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond

from bot.slack.actions import REFUSAL, ThreadActions
from bot.slack.command_args import ThreadRef
from bot.slack.handlers.fields import handoff_metadata, path, shortcut_thread, text
from bot.slack.handlers.replies import ephemeral_in_thread, ephemeral_response
from bot.slack.render.blocks import BUSY_TEXT
from bot.slack.render.views import checking_modal, handoff_modal, refusal_modal
from bot.slack.services import BotServices
from bot.threads.admission import Priority, RateVerdict, UserRate

PICK_ONE = "Pick either a person or an agent (not both)."


class ShortcutHandlers:
    """`on_summary_shortcut`, `on_handoff_shortcut` and `on_handoff_submit`, with the
    thread actions behind them and the users' shared rate."""

    def __init__(self, services: BotServices, actions: ThreadActions, rate: UserRate) -> None:
        self.services = services
        self.actions = actions
        self.rate = rate

    async def on_summary_shortcut(
        self, ack: AsyncAck, shortcut: dict[str, Any], respond: AsyncRespond
    ) -> None:
        """Summarise the shortcut's thread for the requester alone."""
        await ack()
        where = shortcut_thread(shortcut)
        if where is None:
            return
        team, user, ref = where
        reply = ephemeral_response(respond)
        if await self.rate.check(user) is not RateVerdict.ALLOW:
            await reply(BUSY_TEXT, None)
            return
        summary = self.actions.summarize(
            team_id=team, user=user, ref=ref, public=False, reply=reply
        )
        self.services.worker.run(summary, Priority.COMMAND)

    async def on_handoff_shortcut(
        self, ack: AsyncAck, shortcut: dict[str, Any], respond: AsyncRespond
    ) -> None:
        """Open the hand-off modal for the shortcut's thread (or say why not)."""
        await ack()
        where = shortcut_thread(shortcut)
        trigger = shortcut.get("trigger_id")
        if where is None or not isinstance(trigger, str):
            return
        team, user, ref = where
        if await self.rate.check(user) is not RateVerdict.ALLOW:
            await ephemeral_response(respond)(BUSY_TEXT, None)
            return
        # Outside the model limit: a trigger id lasts 3 s, a slot may be minutes away.
        self.services.worker.spawn(self._open_modal(team, user, ref, trigger))

    async def _open_modal(self, team: str, user: str, ref: ThreadRef, trigger: str) -> None:
        # A "checking" view first, so the trigger id is used before any lookup; the
        # modal replaces it once the requester is authorised. A refused user never sees
        # agent names.
        opened = await self.services.client.views_open(trigger_id=trigger, view=checking_modal())
        if not await self.actions.authorised(team, user, ref):
            view = refusal_modal(REFUSAL)
        else:
            meta = {"team": team, "channel": ref.channel, "thread_ts": ref.thread_ts}
            agents = self.actions.handoff_agents()
            view = handoff_modal(private_metadata=json.dumps(meta), agents=agents)
        await self.services.client.views_update(view_id=opened["view"]["id"], view=view)

    async def on_handoff_submit(
        self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]
    ) -> None:
        """Hand off as the submitted modal says: to a person or to an agent, with a note."""
        values = path(view, "state", "values")
        person = text(path(values, "person", "value", "selected_user"))
        agent = text(path(values, "agent", "value", "selected_option", "value"))
        note = text(path(values, "note", "value", "value")) or ""
        meta = handoff_metadata(view.get("private_metadata"))
        user = text(path(body, "user", "id"))
        if meta is None or user is None:
            await ack()
            return
        if bool(person) == bool(agent):
            await ack(response_action="errors", errors={"person": PICK_ONE})
            return
        await ack()
        ref = ThreadRef(channel=meta["channel"], thread_ts=meta["thread_ts"])
        reply = ephemeral_in_thread(self.services.client, ref, user)
        if await self.rate.check(user) is not RateVerdict.ALLOW:
            self.services.worker.spawn(reply(BUSY_TEXT, None))
            return
        handoff = self.actions.handoff(
            team_id=meta["team"],
            user=user,
            ref=ref,
            person=person,
            agent=agent,
            note=note,
            reply=reply,
        )
        self.services.worker.run(handoff, Priority.COMMAND)
