"""Summarise and hand off threads: the work behind the slash commands and shortcuts."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackApiError

from agents.events import Event, Part
from agents.llm_agent import LlmAgent
from bot.slack.command_args import ThreadRef
from bot.slack.mrkdwn import escape
from bot.slack.permalinks import thread_links
from bot.slack.services import BotServices
from bot.threads.summaries import SummaryView, summarize_session
from storage.threads import ThreadKey

log = logging.getLogger(__name__)

# (text, blocks) -> shows the requester an ephemeral message
Reply = Callable[[str, list[dict[str, Any]] | None], Awaitable[None]]

REFUSAL = "You can only summarise or hand off threads in channels you are a member of."
UNKNOWN_THREAD = (
    "I have no conversation in that thread, so there is nothing to summarise or hand off."
)


class ThreadActions:
    """Authorised summary and handoff of one thread, reporting back through `reply`."""

    def __init__(self, services: BotServices) -> None:
        self.s = services

    def handoff_agents(self) -> list[str]:
        """Agents a thread can be handed to: every LLM agent of the tree."""
        return handoff_agents(self.s.runner.agent)

    async def authorised(self, user: str, channel: str) -> bool:
        """A support lead, or a member of the thread's channel."""
        if user in self.s.settings.support_leads:
            return True
        cursor = None
        try:
            for _ in range(50):  # bounded: 50 pages of 1000 members
                resp = await self.s.client.conversations_members(
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

    async def _load(self, team_id: str, ref: ThreadRef, user: str, reply: Reply) -> Any:
        if not await self.authorised(user, ref.channel):
            await reply(REFUSAL, None)
            return None
        key = ThreadKey(team_id=team_id, channel_id=ref.channel, thread_ts=ref.thread_ts)
        record = await self.s.db.threads.get(key)
        session = None
        if record is not None:
            session = await self.s.db.sessions.get_session(
                app_name=record.app_name, user_id=record.user_id, session_id=record.session_id
            )
        if session is None or not session.events:
            await reply(UNKNOWN_THREAD, None)
            return None
        return key, record, session

    async def _summary(self, ref: ThreadRef, session: Any) -> tuple[SummaryView, str]:
        links = await thread_links(self.s.client, ref.channel, ref.thread_ts)
        view = await summarize_session(self.s.summarizer, session, links=links)
        return view, links.thread_link

    async def summarize(
        self, *, team_id: str, user: str, ref: ThreadRef, public: bool, reply: Reply
    ) -> None:
        """Summarise for the requester (or, with `public`, in the thread)."""
        loaded = await self._load(team_id, ref, user, reply)
        if loaded is None:
            return
        _, _, session = loaded
        view, _ = await self._summary(ref, session)
        if public and view.ok:
            await self.s.client.chat_postMessage(
                channel=ref.channel, thread_ts=ref.thread_ts, text=view.text, blocks=view.blocks
            )
            await reply("Posted the summary in the thread.", None)
        else:
            await reply(view.text, view.blocks)

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
        if agent is not None and agent not in self.handoff_agents():
            known = ", ".join(f"`{a}`" for a in self.handoff_agents())
            await reply(f"There is no agent called `{escape(agent)}`. Known agents: {known}.", None)
            return
        key, record, session = loaded
        view, thread_link = await self._summary(ref, session)
        if person is not None:
            await self._to_person(key, ref, user, person, note, view, thread_link)
            await reply(f"Handed off to <@{person}>.", None)
        elif agent is not None:
            await self._to_agent(key, record, session, user, agent, note, view)
            await reply(f"Handed off to `{agent}`.", None)

    async def _to_person(
        self,
        key: ThreadKey,
        ref: ThreadRef,
        requester: str,
        person: str,
        note: str,
        view: SummaryView,
        thread_link: str,
    ) -> None:
        header = f"<@{person}>, <@{requester}> handed this thread off to you."
        if note:
            header += f"\n>{escape(note)}"
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": header}}, *view.blocks]
        await self.s.client.chat_postMessage(
            channel=ref.channel, thread_ts=ref.thread_ts, text=header, blocks=blocks
        )
        lead_channel = self.s.settings.support_lead_channel
        if lead_channel:
            lead_header = f"{header}\n<{thread_link}|Open the thread>"
            await self.s.client.chat_postMessage(
                channel=lead_channel,
                text=lead_header,
                blocks=[
                    {"type": "section", "text": {"type": "mrkdwn", "text": lead_header}},
                    *view.blocks,
                ],
            )
        await self.s.db.threads.set_status(key, "handed_off")

    async def _to_agent(
        self,
        key: ThreadKey,
        record: Any,
        session: Any,
        requester: str,
        agent: str,
        note: str,
        view: SummaryView,
    ) -> None:
        text = view.plain + (f"\nNote from the person handing off: {note}" if note else "")
        await hand_to_agent(self.s.db, key, record, session, agent, text)
        message = f"<@{requester}> handed this thread to *{escape(agent)}*."
        await self.s.client.chat_postMessage(
            channel=key.channel_id, thread_ts=key.thread_ts, text=message
        )


def handoff_agents(root: Any) -> list[str]:
    """Agents a thread can be handed to: every LLM agent of the tree under `root`."""
    return [a.name for a in root.walk() if isinstance(a, LlmAgent)]


async def hand_to_agent(
    db: Any, key: ThreadKey, record: Any, session: Any, agent: str, text: str
) -> str:
    """Point the thread at a new session whose first event is `text` (the handoff record
    in plain text), authored by `agent`; returns the new session id. Shared by the Slack
    commands and the terminal chat."""
    sessions, new_id = db.sessions, uuid.uuid4().hex
    fresh = await sessions.create_session(
        app_name=record.app_name, user_id=record.user_id, session_id=new_id
    )
    # Authored by the target agent so that the runner routes the next message to it.
    await sessions.append_event(fresh, Event(author=agent, parts=(Part(text=text),)))
    await db.threads.remap(key, session_id=new_id, owner_agent=agent, source_session_id=session.id)
    await db.threads.set_status(key, "active")
    await db.threads.touch(key, now=time.time(), owner_agent=agent)
    return new_id
