"""Handing a thread to another agent, for every transport (the Slack commands and the
terminal chat's `/handoff`)."""

from __future__ import annotations

import time
import uuid

from agents.base_agent import BaseAgent
from agents.events import Event, Part
from agents.llm_agent import LlmAgent
from agents.session import Session
from storage.database import Database
from storage.threads import ThreadRecord


def handoff_agents(root: BaseAgent) -> list[str]:
    """Agents a thread can be handed to: every LLM agent of the tree under `root`."""
    return [a.name for a in root.walk() if isinstance(a, LlmAgent)]


async def hand_to_agent(
    db: Database, thread: ThreadRecord, session: Session, agent: str, text: str
) -> str:
    """Point the thread at a new session whose first event is `text` (the handoff record
    in plain text), authored by `agent`; returns the new session id."""
    sessions, new_id = db.sessions, uuid.uuid4().hex
    fresh = await sessions.create_session(
        app_name=thread.app_name, user_id=thread.user_id, session_id=new_id
    )
    # Authored by the target agent so that the runner routes the next message to it.
    await sessions.append_event(fresh, Event(author=agent, parts=(Part(text=text),)))
    key = thread.key
    await db.threads.remap(key, session_id=new_id, owner_agent=agent, source_session_id=session.id)
    await db.threads.set_status(key, "active")
    await db.threads.touch(key, now=time.time(), owner_agent=agent)
    return new_id
