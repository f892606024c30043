"""Handing a thread to another agent, for every transport (the Slack commands and the
terminal chat's `/handoff`).

Only agents that can own a thread are targets: the root, and every agent the runner's
resume rule would let answer the next message (never a step inside a workflow, such
as `diagnose`). The new session starts from one hand-off record, authored `handoff`
(never the target's name): the validated summary, or, when the summary failed, the
source thread's own messages fenced as data and bounded; always with a pointer back to
the source session and thread, the documentation its replies cited (from their events),
and any note quoted. A partial record (gap windows, an
unsummarised open tail) comes with the raw events of every span it does not cover, so
no word of the thread is lost to the new session.
"""

from __future__ import annotations

import time
import uuid

from agents.base_agent import BaseAgent
from agents.events import Event
from agents.handoff import handoff_event
from agents.knowledge.thread_sources import sources_text, thread_sources
from agents.quoting import quoted
from agents.runner import find_agent_to_run
from agents.sessions.session import Session
from agents.summary.entities import EntityExtractor
from agents.summary.render import uncovered_text
from agents.summary.transcript import RenderOptions, render_transcript
from agents.summary.windows import summarised_events
from bot.threads.summaries import ThreadSummary
from storage.database import Database
from storage.threads import ThreadRecord

# The raw thread that stands in for a failed summary: the opening messages and as many
# of the latest as fit (about 12,000 characters), secrets masked.
RAW_THREAD = RenderOptions(token_budget=3000, max_text_chars=2000, max_tool_chars=500)


def handoff_agents(root: BaseAgent) -> list[str]:
    """Agents that can own a thread under `root`: those the resume rule would pick."""
    owners = []
    for agent in root.walk():
        probe = Session(
            id="probe", app_name="", user_id="", events=[Event(id="e1", author=agent.name)]
        )
        if find_agent_to_run(probe, root) is agent:
            owners.append(agent.name)
    return owners


def raw_thread(events: list[Event]) -> str:
    """The thread's own messages, fenced as data, bounded, sensitive values masked."""
    mask = EntityExtractor().extract(events)
    return render_transcript(events, RAW_THREAD, mask=mask).fenced()


def handoff_text(
    summary: ThreadSummary, *, thread_link: str | None, note: str, note_by: str = ""
) -> str:
    """The record a session handed off from `summary`'s session starts from; `note`
    is quoted as the words of `note_by` (the transport's name for its writer)."""
    session = summary.session
    where = f" (thread {thread_link})" if thread_link else ""
    lines = [f"Handed off from session {session.id}{where}."]
    if summary.ok:
        lines.append(summary.plain)
        uncovered = uncovered_text(
            summarised_events(session.events), summary.gaps, summary.unsummarised
        )
        if uncovered:
            lines.append(uncovered)
    else:
        lines.append(
            "No validated summary is available, so this is the source thread itself, "
            "as data (the opening messages and the latest that fit):"
        )
        lines.append(raw_thread(list(session.events)))
        # The raw messages do not show which documentation each reply cited.
        cited = sources_text(thread_sources(session.events))
        if cited:
            lines.append(cited)
    if note:
        lines.append(f"{note_by or 'The person handing off'} wrote (their own words, quoted):")
        lines.append(quoted(note))
    return "\n".join(lines)


async def hand_to_agent(
    db: Database, thread: ThreadRecord, session: Session, agent: str, text: str
) -> str:
    """Point the thread at a new session that starts from the hand-off record `text`
    and routes to `agent`; returns the new session id."""
    sessions, new_id = db.sessions, uuid.uuid4().hex
    fresh = await sessions.create_session(
        app_name=thread.app_name, user_id=thread.user_id, session_id=new_id
    )
    await sessions.append_event(fresh, handoff_event(text, target=agent, source=session.id))
    key = thread.key
    await db.threads.remap(key, session_id=new_id, owner_agent=agent, source_session_id=session.id)
    await db.threads.set_status(key, "active")
    await db.threads.touch(key, now=time.time(), owner_agent=agent)
    return new_id
