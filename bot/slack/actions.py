"""Summarise and hand off threads: the work behind the slash commands and shortcuts.

Who may do what (checked before anything else is shown or posted):
- Summarise, or hand a thread to an agent: whoever `bot.slack.access` lets act on the
  thread (`SUPPORT_LEADS`; the members of a direct message, the customer included; in a
  channel, as `HANDOFF_POLICY` says: its members, or only those who wrote in the thread,
  the default in shared channels, or only leads).
- Hand a thread to a person, or attach a note: the same, but never from a direct or
  group direct message with the bot unless a support lead: a customer cannot post into
  the support-lead channel or ping anyone. (`conversations.info` tells; when it cannot,
  the thread counts as direct.) A note is always shown as its writer's own words.
- A person target must be a person of the workspace (`users.info`, scope `users:read`):
  not a bot, an app, a deactivated account or a user of another organisation's
  workspace; user groups are not targets at all.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from slack_sdk.errors import SlackApiError

from agents.sessions.session import Session
from bot.slack.access import ChannelKind, ThreadAccess
from bot.slack.command_args import ThreadRef
from bot.slack.permalinks import ThreadLinks, thread_links
from bot.slack.render.handoff_blocks import agent_handoff, person_handoff
from bot.slack.render.limits import Reply, post_paged, reply_paged
from bot.slack.render.mrkdwn import escape
from bot.slack.render.summary_blocks import summary_message
from bot.slack.services import BotServices
from bot.threads.handoff import hand_to_agent, handoff_agents, handoff_text
from bot.threads.participants import participants
from bot.threads.summaries import ThreadSummary, summarize_session
from storage.threads import ThreadKey, ThreadRecord

log = logging.getLogger(__name__)

REFUSAL = (
    "You can only summarise or hand off a thread you may act on: as a member of its "
    "channel, or in a shared channel as someone who wrote in the thread."
)
UNKNOWN_THREAD = (
    "I have no conversation in that thread, so there is nothing to summarise or hand off."
)
DIRECT_REFUSAL = (
    "From a direct message you can hand the conversation to an agent, without a note. "
    "Handing off to a person, or adding a note, is for the support team."
)
NOT_A_PERSON = "Hand-offs go to a person in this workspace, not to a bot, an app or a group."


@dataclass(frozen=True)
class Permit:
    """A requester may act on a thread: what its channel is, and the thread itself when
    the check loaded it (the participants policy reads who wrote in it)."""

    kind: ChannelKind
    thread: tuple[ThreadRecord, Session] | None = None


class ThreadActions:
    """Authorised summary and handoff of one thread, reporting back through `reply`."""

    def __init__(self, services: BotServices) -> None:
        self.services = services
        self.access = ThreadAccess(services)

    def handoff_agents(self) -> list[str]:
        """Agents a thread can be handed to: those that can own a thread."""
        return handoff_agents(self.services.runner.agent)

    async def authorised(self, team_id: str, user: str, ref: ThreadRef) -> bool:
        """May `user` act on the thread at all (see `bot.slack.access`)?"""
        return await self._authorise(team_id, user, ref) is not None

    async def _authorise(self, team_id: str, user: str, ref: ThreadRef) -> Permit | None:
        """The channel's kind, and the thread when the check had to load it; None when
        `user` may not act on the thread."""
        kind = await self.access.kind(ref.channel)
        if self.access.is_lead(user):
            return Permit(kind)
        # A direct message's members may; a channel Slack could not describe is both
        # direct and shared here, so it gets the stricter rule.
        policy = "members" if kind.direct and not kind.shared else self.access.policy(kind)
        if policy == "leads" or not await self.access.is_member(user, ref.channel):
            return None
        if policy == "members":
            return Permit(kind)
        loaded = await self._thread(team_id, ref)
        if loaded is None or user not in participants(loaded[1], owner=loaded[0].user_id):
            return None
        return Permit(kind, loaded)

    def may_reach_people(self, user: str, kind: ChannelKind) -> bool:
        """May `user` (already authorised) hand off to a person or write a note?"""
        return self.access.is_lead(user) or not kind.direct

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

    async def _thread(self, team_id: str, ref: ThreadRef) -> tuple[ThreadRecord, Session] | None:
        key = ThreadKey(team_id=team_id, channel_id=ref.channel, thread_ts=ref.thread_ts)
        record = await self.services.db.threads.get(key)
        session = None if record is None else await self.services.db.sessions.of_thread(record)
        if record is None or session is None or not session.events:
            return None
        return record, session

    async def _load(
        self, team_id: str, ref: ThreadRef, user: str, reply: Reply
    ) -> tuple[ChannelKind, ThreadRecord, Session] | None:
        permit = await self._authorise(team_id, user, ref)
        if permit is None:
            await reply(REFUSAL, None)
            return None
        loaded = permit.thread or await self._thread(team_id, ref)
        if loaded is None:
            await reply(UNKNOWN_THREAD, None)
            return None
        return permit.kind, *loaded

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
        _, _, session = loaded
        summary, links = await self._summary(ref, session, "summary")
        # Posted for the whole channel, tool calls and results are for the leads alone.
        tool_results = not public or self.access.is_lead(user)
        text, blocks = summary_message(summary, links=links, tool_results=tool_results)
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
        kind, record, session = loaded
        if (person is not None or note) and not self.may_reach_people(user, kind):
            await reply(DIRECT_REFUSAL, None)
            return
        if agent is not None and agent not in self.handoff_agents():
            known = ", ".join(f"`{a}`" for a in self.handoff_agents())
            await reply(f"There is no agent called `{escape(agent)}`. Known agents: {known}.", None)
            return
        if person is not None and not await self.is_person(person, team_id):
            await reply(NOT_A_PERSON, None)
            return
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
        text = handoff_text(
            summary, thread_link=links.thread_link, note=note, note_by=f"<@{requester}>"
        )
        await hand_to_agent(self.services.db, record, session, agent, text)
        key = record.key
        message, blocks = agent_handoff(
            requester=requester, agent=agent, note=note, summary=summary
        )
        await post_paged(
            self.services.client,
            channel=key.channel_id,
            thread_ts=key.thread_ts,
            text=message,
            blocks=blocks,
        )
