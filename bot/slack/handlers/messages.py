"""Messages: the bot's main entry, `on_message`, for mentions, DMs and thread replies.

It runs before Bolt answers (`process_before_response=True`), so it only decides and
records: the message is accepted durably before the ack, and the answer runs in
`services.worker` in thread order.
"""

from __future__ import annotations

from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack import dm_conversation
from bot.slack.conversation import SlackReplier, thread_key
from bot.slack.messages import parse_message
from bot.slack.services import BotServices
from bot.threads.admission import RateVerdict, UserRate


class MessageHandlers:
    """`on_message`, with the replier that answers and the users' shared rate."""

    def __init__(self, services: BotServices, replier: SlackReplier, rate: UserRate) -> None:
        self.services = services
        self.replier = replier
        self.rate = rate

    async def on_message(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        """Take a message addressed to the bot (or in one of its active threads): drop a
        duplicate, refuse it when its user is over their rate, accept it durably, then queue
        its answer behind its thread's earlier messages, or refuse it as busy."""
        services, worker = self.services, self.services.worker
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
        # The rate before the write: an over-rate message is never accepted, and its
        # user is told once a window, not once a message.
        verdict = await self.rate.check(msg.user)
        if verdict is not RateVerdict.ALLOW:
            if verdict is RateVerdict.TELL:
                worker.spawn(self.replier.refuse_busy(msg))
            return
        try:
            idle = services.settings.dm_conversation_idle_minutes
            msg, placement = await dm_conversation.place(services.db, msg, idle_minutes=idle)
            # Durable before the ack: a crash after this point loses nothing (bot.slack.recovery).
            accepted = await self.replier.accept(msg, placement)
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
        if not worker.has_room(key):
            worker.spawn(self.replier.refuse_busy(msg))
            return
        worker.submit(key, lambda: self.replier.handle(msg))
