"""Who took part in a thread: the people who wrote in it, for transports that let only
them act on it (`HANDOFF_POLICY=participants`)."""

from __future__ import annotations

from agents.sessions.session import Session
from bot.threads.speaker import speaker_of


def participants(session: Session, *, owner: str) -> frozenset[str]:
    """The thread's `owner` (who opened it) and everyone whose message is one of the
    session's user events."""
    speakers = {speaker_of(event) for event in session.events if event.author == "user"}
    return frozenset({owner, *(s for s in speakers if s)})
