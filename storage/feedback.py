"""Feedback on AI replies: the thumbs up or down a person gave one reply.

One row per (session, reply event, person), holding the button they clicked last and
whether they are the thread's customer or staff. Slack may deliver a click twice, and
several bot processes may each receive a copy: the primary key makes the second copy
find the first one's row, so it is never counted twice. A person who changes their mind
changes their row's value.

A click's reply is found by key (`reply`), never by loading its session: the button
names an event id, which is only unique within one session, so the event must also have
been posted no later than the message the button is on. After a hand-off re-maps the
thread to a new session, an old button's event id names a later event there, and the
lookup follows the hand-off back to the session the reply is in.

A digest's counts (`for_session_chain`) take in the sessions its session was handed off
from: a hand-off re-maps the thread to a new session, and the digest of that one is the
thread's one lead-channel message, so a mark on a reply from before the hand-off must
show there.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agents.handoff import HANDOFF_AUTHOR, HANDOFF_SOURCE
from storage.engine import SqlGate
from storage.schema import events, feedback, sessions

# How many hand-offs back a click's reply is looked for (each is two key lookups).
MAX_HANDOFF_HOPS = 8

FeedbackValue = Literal["positive", "negative"]
VALUES: tuple[FeedbackValue, ...] = ("positive", "negative")
# What `record` did: a first click, a changed mind, or a copy of what is stored.
Recorded = Literal["new", "changed", "duplicate"]
# Who marked a reply: the thread's owner, or anyone else.
Marker = Literal["customer", "staff"]


@dataclass(frozen=True)
class StoredReply:
    """The reply a feedback button is under: its session, event and agent."""

    session_id: str
    event_id: str
    agent: str


@dataclass(frozen=True)
class FeedbackClick:
    """One click on a reply's feedback buttons, resolved to the reply's event."""

    team_id: str
    channel_id: str
    thread_ts: str
    session_id: str
    event_id: str
    agent: str
    user_id: str
    value: FeedbackValue
    marker: Marker


class FeedbackStore:
    """Stores feedback clicks once per person and reply, and counts a digest's
    (totals per agent are `storage.stats`'s)."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate

    async def record(self, click: FeedbackClick, *, now: float) -> Recorded:
        """Store `click`: "new" for a person's first click on the reply, "changed" when
        it replaces their other button, "duplicate" when it is what is stored already."""

        async def tx(conn: AsyncConnection) -> Recorded:
            inserted = await conn.execute(
                self._gate.insert(feedback)
                .values(
                    **asdict(click),
                    created_at=now,
                    updated_at=now,
                )
                .on_conflict_do_nothing()
                .returning(feedback.c.event_id)
            )
            if inserted.first() is not None:
                return "new"
            changed = await conn.execute(
                sa.update(feedback)
                .where(
                    feedback.c.session_id == click.session_id,
                    feedback.c.event_id == click.event_id,
                    feedback.c.user_id == click.user_id,
                    feedback.c.value != click.value,
                )
                .values(value=click.value, updated_at=now)
            )
            return "changed" if changed.rowcount else "duplicate"

        return await self._gate.write(tx)

    async def for_session_chain(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> dict[tuple[str, str], int]:
        """How many replies people marked, per (marker, value), in session `session_id` and
        the sessions it was handed off from (up to `MAX_HANDOFF_HOPS` back)."""

        async def tx(conn: AsyncConnection) -> dict[tuple[str, str], int]:
            chain = [session_id]
            for _ in range(MAX_HANDOFF_HOPS):
                source = await _handed_off_from(conn, app_name, user_id, chain[-1])
                if source is None or source in chain:
                    break
                chain.append(source)
            # A reply is its (session, event): event ids repeat across sessions.
            marked = (
                sa.select(
                    feedback.c.marker,
                    feedback.c.value,
                    feedback.c.session_id,
                    feedback.c.event_id,
                )
                .where(feedback.c.session_id.in_(chain))
                .distinct()
                .subquery()
            )
            query = sa.select(marked.c.marker, marked.c.value, sa.func.count()).group_by(
                marked.c.marker, marked.c.value
            )
            return {
                (marker, value): int(n)
                for marker, value, n in await conn.execute(query)
                if value in VALUES and marker in ("customer", "staff")
            }

        return await self._gate.read(tx)

    async def reply(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        event_id: str,
        message_ts: str,
        ts_key: str,
    ) -> StoredReply | None:
        """The agent reply `event_id` whose button is on Slack message `message_ts`, in
        session `session_id` or one it was handed off from; `ts_key` is the event
        metadata key holding the Slack ts it was posted as. None when there is none."""
        if not (event_id[:1] == "e" and event_id[1:].isdigit()):
            return None
        seq = int(event_id[1:])

        async def find(conn: AsyncConnection, session: str) -> tuple[str | None, str | None]:
            """(the reply's agent if this session holds it, the session handed off from)."""
            pk = _session_pk(app_name, user_id, session)
            rows = await conn.execute(
                sa.select(events.c.seq, events.c.author, events.c.custom_metadata).where(
                    events.c.session_pk == pk, events.c.seq.in_((1, seq))
                )
            )
            by_seq = {row.seq: (row.author, row.custom_metadata or {}) for row in rows}
            agent = None
            if seq in by_seq:
                author, meta = by_seq[seq]
                posted = meta.get(ts_key)
                reply = author not in ("user", HANDOFF_AUTHOR)
                if reply and isinstance(posted, str) and _ts(posted) <= _ts(message_ts):
                    agent = author
            source = by_seq.get(1, ("", {}))[1].get(HANDOFF_SOURCE)
            return agent, source if isinstance(source, str) else None

        async def tx(conn: AsyncConnection) -> StoredReply | None:
            session: str | None = session_id
            for _ in range(MAX_HANDOFF_HOPS + 1):
                if session is None:
                    return None
                agent, source = await find(conn, session)
                if agent is not None:
                    return StoredReply(session_id=session, event_id=event_id, agent=agent)
                session = source
            return None

        return await self._gate.read(tx)


async def _handed_off_from(
    conn: AsyncConnection, app_name: str, user_id: str, session_id: str
) -> str | None:
    """The session `session_id`'s hand-off record was made from, if it starts with one."""
    pk = _session_pk(app_name, user_id, session_id)
    first = await conn.execute(
        sa.select(events.c.custom_metadata).where(events.c.session_pk == pk, events.c.seq == 1)
    )
    source = (first.scalar() or {}).get(HANDOFF_SOURCE)
    return source if isinstance(source, str) else None


def _ts(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        return float("inf")


def _session_pk(app_name: str, user_id: str, session_id: str) -> sa.ScalarSelect[int]:
    """The stored session's primary key, as a subquery."""
    return (
        sa.select(sessions.c.pk)
        .where(
            sessions.c.app_name == app_name,
            sessions.c.user_id == user_id,
            sessions.c.session_id == session_id,
        )
        .scalar_subquery()
    )
