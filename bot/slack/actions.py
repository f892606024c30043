"""Summarise and hand off threads: the work behind the slash commands and shortcuts.

Who may do what (checked before anything else is shown or posted):
- Summarise, or hand a thread to an agent: a member of the thread's channel, or one of
  `SUPPORT_LEADS`. In a direct message with the bot that includes the customer.
- Hand a thread to a person, or attach a note: one of `SUPPORT_LEADS`, or a member of a
  channel thread. Never from a direct or group direct message with the bot unless a
  support lead: a customer cannot post into the support-lead channel or ping anyone.
  (`conversations.info` tells; when it cannot, the thread counts as direct.)
- A person target must be a person of the workspace (`users.info`, scope `users:read`):
  not a bot, an app, a deactivated account or a user of another organisation's
  workspace; user groups are not targets at all.
"""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError

from agents.sessions.session import Session
from bot.slack.command_args import ThreadRef
from bot.slack.permalinks import ThreadLinks, thread_links
from bot.slack.render.handoff_blocks import agent_handoff, person_handoff
from bot.slack.render.limits import Reply, post_paged, reply_paged
from bot.slack.render.mrkdwn import escape
from bot.slack.render.summary_blocks import summary_message
from bot.slack.services import BotServices
from bot.threads.handoff import hand_to_agent, handoff_agents, handoff_text
from bot.threads.summaries import ThreadSummary, summarize_session
from storage.threads import ThreadKey, ThreadRecord

log = logging.getLogger(__name__)

REFUSAL = "You can only summarise or hand off threads in channels you are a member of."
UNKNOWN_THREAD = (
    "I have no conversation in that thread, so there is nothing to summarise or hand off."
)
DIRECT_REFUSAL = (
    "From a direct message you can hand the conversation to an agent, without a note. "
    "Handing off to a person, or adding a note, is for the support team."
)
NOT_A_PERSON = "Hand-offs go to a person in this workspace, not to a bot, an app or a group."


class ThreadActions:
    """Authorised summary and handoff of one thread, reporting back through `reply`."""

    def __init__(self, services: BotServices) -> None:
        self.services = services

    def handoff_agents(self) -> list[str]:
        """Agents a thread can be handed to: those that can own a thread."""
        return handoff_agents(self.services.runner.agent)

    async def authorised(self, user: str, channel: str) -> bool:
        """A support lead, or a member of the thread's channel."""
        if user in self.services.settings.support_leads:
            return True
        cursor = None
        try:
            for _ in range(50):  # bounded: 50 pages of 1000 members
                resp = await self.services.client.conversations_members(
                    channel=channel, limit=1000, cursor=cursor
                )
                if user in resp.get("members", []):
                    return True
                cursor = (resp.get("response_metadata") or {}).get("next_cursor")
                if not cursor:
                    return False
        except SlackApiError as exc:
            log.info("membership check failed", extra={"error": exc.response.get("error")})
        return False

    async def may_reach_people(self, user: str, channel: str) -> bool:
        """May `user` (already authorised) hand off to a person or write a note?"""
        return user in self.services.settings.support_leads or not await self.is_direct(channel)

    async def is_direct(self, channel: str) -> bool:
        """A direct or group direct message; unknown counts as direct (fails closed)."""
        if channel.startswith("D"):
            return True
        try:
            answer = await self.services.client.conversations_info(channel=channel)
        except SlackApiError as exc:
            log.info("channel check failed", extra={"error": exc.response.get("error")})
            return True
        info = answer.get("channel") or {}
        return bool(info.get("is_im") or info.get("is_mpim"))

    async def is_person(self, user: str, team_id: str) -> bool:
        """A person of workspace `team_id`: known to `users.info`, not a bot, an app, a
        deactivated account or someone from another organisation's workspace."""
        try:
            answer = await self.services.client.users_info(user=user)
        except SlackApiError as exc:
            log.info("person check failed", extra={"error": exc.response.get("error")})
            return False
        profile = answer.get("user") or {}
        return not (
            profile.get("is_bot")
            or profile.get("is_app_user")
            or profile.get("deleted")
            or profile.get("id") == "USLACKBOT"
            or profile.get("team_id", team_id) != team_id
        )

    async def _load(
        self, team_id: str, ref: ThreadRef, user: str, reply: Reply
    ) -> tuple[ThreadRecord, Session] | None:
        if not await self.authorised(user, ref.channel):
            await reply(REFUSAL, None)
            return None
        key = ThreadKey(team_id=team_id, channel_id=ref.channel, thread_ts=ref.thread_ts)
        record = await self.services.db.threads.get(key)
        session = None if record is None else await self.services.db.sessions.of_thread(record)
        if record is None or session is None or not session.events:
            await reply(UNKNOWN_THREAD, None)
            return None
        return record, session

    async def _summary(
        self, ref: ThreadRef, session: Session, surface: str
    ) -> tuple[ThreadSummary, ThreadLinks]:
        links = await thread_links(self.services.client, ref.channel, ref.thread_ts)
        summary = await summarize_session(
            self.services.summarizer,
            session,
            surface=surface,
            deliveries=self.services.db.summary_deliveries,
        )
        return summary, links

    async def summarize(
        self, *, team_id: str, user: str, ref: ThreadRef, public: bool, reply: Reply
    ) -> None:
        """Summarise for the requester (or, with `public`, in the thread)."""
        loaded = await self._load(team_id, ref, user, reply)
        if loaded is None:
            return
        _, session = loaded
        summary, links = await self._summary(ref, session, "summary")
        text, blocks = summary_message(summary, links=links)
        if public and summary.ok:
            await post_paged(
                self.services.client,
                channel=ref.channel,
                thread_ts=ref.thread_ts,
                text=text,
                blocks=blocks,
            )
            await reply("Posted the summary in the thread.", None)
        else:
            await reply_paged(reply, text, blocks)

    async def handoff(
        self,
        *,
        team_id: str,
        user: str,
        ref: ThreadRef,
        person: str | None,
        agent: str | None,
        note: str,
        reply: Reply,
    ) -> None:
        """Hand the thread to a person (lead channel + thread) or to an agent (new session)."""
        # Authorise first: a refused user learns nothing, not even the agents' names.
        loaded = await self._load(team_id, ref, user, reply)
        if loaded is None:
            return
        if (person is not None or note) and not await self.may_reach_people(user, ref.channel):
            await reply(DIRECT_REFUSAL, None)
            return
        if agent is not None and agent not in self.handoff_agents():
            known = ", ".join(f"`{a}`" for a in self.handoff_agents())
            await reply(f"There is no agent called `{escape(agent)}`. Known agents: {known}.", None)
            return
        if person is not None and not await self.is_person(person, team_id):
            await reply(NOT_A_PERSON, None)
            return
        record, session = loaded
        summary, links = await self._summary(ref, session, "handoff")
        try:
            if person is not None:
                await self._to_person(record.key, user, person, note, summary, links)
                await reply(f"Handed off to <@{person}>.", None)
            elif agent is not None:
                await self._to_agent(record, session, user, agent, note, summary, links)
                await reply(f"Handed off to `{agent}`.", None)
        except SlackApiError as exc:
            code = str(exc.response.get("error") or "slack_error")
            log.warning("hand-off post refused: %s", code)
            await reply(f"I couldn't post the hand-off: Slack answered `{escape(code)}`.", None)

    async def _to_person(
        self,
        key: ThreadKey,
        requester: str,
        person: str,
        note: str,
        summary: ThreadSummary,
        links: ThreadLinks,
    ) -> None:
        notice = person_handoff(
            person=person, requester=requester, note=note, summary=summary, links=links
        )
        client = self.services.client
        await post_paged(
            client,
            channel=links.channel,
            thread_ts=links.thread_ts,
            text=notice.text,
            blocks=notice.thread_blocks,
        )
        lead_channel = self.services.settings.support_lead_channel
        if lead_channel:
            await post_paged(
                client, channel=lead_channel, text=notice.text, blocks=notice.lead_blocks
            )
        await self.services.db.threads.set_status(key, "handed_off")

    async def _to_agent(
        self,
        record: ThreadRecord,
        session: Session,
        requester: str,
        agent: str,
        note: str,
        summary: ThreadSummary,
        links: ThreadLinks,
    ) -> None:
        text = handoff_text(summary, thread_link=links.thread_link, note=note)
        await hand_to_agent(self.services.db, record, session, agent, text)
        key = record.key
        message, blocks = agent_handoff(requester=requester, agent=agent, summary=summary)
        await post_paged(
            self.services.client,
            channel=key.channel_id,
            thread_ts=key.thread_ts,
            text=message,
            blocks=blocks,
        )
