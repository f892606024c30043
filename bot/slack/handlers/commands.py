"""Slash commands: `/summary`, `/handoff` and `/new`.

Each is refused in its ack when it lacks its sender, cannot be parsed or comes over the
user's rate; otherwise the ack says it is under way and the work runs in
`services.worker` at command priority, answering the requester ephemerally.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from slack_bolt.async_app import AsyncAck, AsyncRespond

from bot.slack import dm_conversation
from bot.slack.actions import ThreadActions
from bot.slack.command_args import CommandSyntaxError, parse_handoff_args, parse_summary_args
from bot.slack.handlers.fields import text, who
from bot.slack.handlers.replies import ephemeral_response
from bot.slack.render.blocks import BUSY_TEXT
from bot.slack.services import BotServices
from bot.threads.admission import Priority, RateVerdict, UserRate

ArgsT = TypeVar("ArgsT")

INCOMPLETE_COMMAND = "That command arrived without its team or user, so I can't act on it."


class CommandHandlers:
    """`on_summary`, `on_handoff` and `on_new`, with the thread actions behind them and
    the users' shared rate."""

    def __init__(self, services: BotServices, actions: ThreadActions, rate: UserRate) -> None:
        self.services = services
        self.actions = actions
        self.rate = rate

    async def on_summary(
        self, ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond
    ) -> None:
        """`/summary <thread link> [public]`."""
        admitted = await self._admit(ack, command, parse_summary_args, "Summarising…")
        if admitted is None:
            return
        team, user, args = admitted
        summary = self.actions.summarize(
            team_id=team,
            user=user,
            ref=args.thread,
            public=args.public,
            reply=ephemeral_response(respond),
        )
        self.services.worker.run(summary, Priority.COMMAND)

    async def on_handoff(
        self, ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond
    ) -> None:
        """`/handoff <thread link> <@person | agent> [note]`."""
        admitted = await self._admit(ack, command, parse_handoff_args, "Handing off…")
        if admitted is None:
            return
        team, user, args = admitted
        handoff = self.actions.handoff(
            team_id=team,
            user=user,
            ref=args.thread,
            person=args.person,
            agent=args.agent,
            note=args.note,
            reply=ephemeral_response(respond),
        )
        self.services.worker.run(handoff, Priority.COMMAND)

    async def on_new(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        """`/new`, in a DM with the bot: the next top-level message starts a new
        conversation."""
        team, user = who(command)
        channel = text(command.get("channel_id"))
        if team is None or user is None or channel is None:
            await ack(text=INCOMPLETE_COMMAND)
        elif not channel.startswith("D"):
            await ack(text=dm_conversation.NEW_ONLY_IN_DM)
        elif await self.rate.check(user) is not RateVerdict.ALLOW:
            # Each `/new` opens a conversation, and so a digest: it counts like a message.
            await ack(text=BUSY_TEXT)
        else:
            await self.services.db.dm_conversations.end(team, channel)
            await ack(text=dm_conversation.NEW_STARTED)

    async def _admit(
        self, ack: AsyncAck, command: dict[str, Any], parse: Callable[[str], ArgsT], accepted: str
    ) -> tuple[str, str, ArgsT] | None:
        """Ack a slash command: its sender, its parsed arguments and the user's rate, each
        refused in the ack itself; None when refused."""
        team, user = who(command)
        if team is None or user is None:
            await ack(text=INCOMPLETE_COMMAND)
            return None
        try:
            args = parse(command.get("text", ""))
        except CommandSyntaxError as exc:
            await ack(text=str(exc))
            return None
        if await self.rate.check(user) is not RateVerdict.ALLOW:
            await ack(text=BUSY_TEXT)
            return None
        await ack(text=accepted)
        return team, user, args
