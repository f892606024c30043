"""Deleting one person's data: what they own, what they said, and what quotes it.

A thread's session belongs to whoever posted first, but anyone may write in it: each
user event carries its sender's id under `SPEAKER_ID` in `custom_metadata` (the bot's
`SpeakerPlugin` sets it). Forgetting a user therefore deletes

- everything they own: their sessions (with every event), threads, user state, memory,
  digests and summary runs, their unanswered in-flight messages, and their feedback
  clicks (with everyone's clicks on their sessions' replies);
- every turn they spoke in someone else's session: their message and the events of the
  same invocation (the reply to it, tool calls and results that may repeat it);
- in each session touched this way, whatever was derived from the whole session and so
  may quote them: compaction summaries, digests, memory and summary runs, and the window
  records whose range holds one of their events (the next digest rebuilds those windows
  from the events that remain). With its compaction summaries gone, such a session is
  loaded whole again (its compaction pointers are reset);
- what the deleted turns wrote into state: an agent's `output_key` value in the
  session's state, `user:` keys (stored under the thread owner's id) and `app:` keys,
  each put back to the latest value a remaining event wrote, or removed
  (`storage.forget_state`);
- the Slack traces of their messages: their DMs' conversation rows (`dm_conversations`,
  `dm_folded`) and the processed-delivery keys that name a DM channel of theirs or one of
  their messages' ts (`deliveries`);
- the hand-off records made from such a session (and from those handed on again), found
  by the record's `HANDOFF_SOURCE` or the thread's `source_session_id`: each record's
  text is replaced by `HANDOFF_REDACTED` (its routing to the target agent stays), and
  what was derived from the handed-off session goes as above.

The Slack messages of the deleted digests (every page of each) are returned, so that
the caller can delete them from the lead channel. `affected_threads` names the threads
whose sessions this touches, so that the caller can hold their locks meanwhile
(`Database.forget_user`), and no running bot writes the person's words again while it
works.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agents.compaction import COMPACTION_AUTHOR
from agents.events import Event, Part
from agents.handoff import HANDOFF_AUTHOR, HANDOFF_SOURCE
from storage.forget_state import WrittenState, restore_written_state, written_by
from storage.schema import (
    deliveries,
    digest_messages,
    digests,
    dm_conversations,
    dm_folded,
    events,
    feedback,
    inflight,
    memory,
    sessions,
    summary_runs,
    summary_windows,
    threads,
    user_rates,
    user_state,
)

# The user event's metadata key naming who sent it (`bot.threads.speaker` writes it).
SPEAKER_ID = "speaker_id"
# The metadata key holding the ts of the Slack message an event came from
# (`bot.slack.message_ts.SLACK_TS`).
SLACK_TS = "slack_ts"
HANDOFF_REDACTED = (
    "This thread was handed off from another session; its hand-off record was removed "
    "by a deletion request."
)


@dataclass
class ForgetReport:
    """Rows deleted (or, for state, changed) per kind, the hand-off records redacted,
    the posted digests (lead-channel ts) they quoted, and the threads locked meanwhile."""

    counts: dict[str, int] = field(default_factory=dict)
    posted_digests: list[str] = field(default_factory=list)
    redacted_handoffs: int = 0
    locked_threads: int = 0


async def forget_user(conn: AsyncConnection, user_id: str) -> ForgetReport:
    """Delete everything that names or quotes `user_id`, inside the caller's transaction."""
    report = ForgetReport()
    owned = sa.select(sessions.c.pk).where(sessions.c.user_id == user_id)
    spoken = (
        await conn.execute(
            sa.select(events.c.session_pk, events.c.invocation_id).where(
                events.c.custom_metadata[SPEAKER_ID].as_string() == user_id,
                events.c.session_pk.not_in(owned),
            )
        )
    ).all()
    spoken_pks = {pk for pk, _ in spoken}
    touched_ids = [
        sid
        for (sid,) in await conn.execute(
            sa.select(sessions.c.session_id).where(sessions.c.pk.in_(spoken_pks))
        )
    ]
    owned_ids = sa.select(sessions.c.session_id).where(sessions.c.user_id == user_id)
    owned_list = [sid for (sid,) in await conn.execute(owned_ids)]
    records = await _handoff_records(conn, [*owned_list, *touched_ids], owned)
    report.redacted_handoffs = await _redact(conn, [pk for pk, *_ in records])
    # Sessions that may quote the user without being theirs: where they spoke, and those
    # that start from a hand-off record made from one of theirs or of those.
    touched_pks = sorted(spoken_pks | {session_pk for _, session_pk, _, _ in records})
    touched_ids = list(dict.fromkeys([*touched_ids, *(sid for *_, sid, _ in records)]))
    cited = sa.or_(
        digests.c.user_id == user_id,
        digests.c.source_session_id.in_(owned_ids),
        digests.c.source_session_id.in_(touched_ids),
    )
    cited_ids = sa.select(digests.c.id).where(cited)
    # Every page of each posted digest; `slack_ts` alone names a digest posted before
    # pages were recorded.
    pages = sa.select(digest_messages.c.ts).where(digest_messages.c.digest_id.in_(cited_ids))
    firsts = sa.select(digests.c.slack_ts).where(cited, digests.c.slack_ts.is_not(None))
    # A thread's later digests update its one message, so their pages share ts.
    found = [ts for (ts,) in await conn.execute(pages)]
    found += [ts for (ts,) in await conn.execute(firsts)]
    posted = list(dict.fromkeys(found))
    report.posted_digests = posted
    turns = sa.tuple_(events.c.session_pk, events.c.invocation_id).in_(
        [(pk, inv) for pk, inv in spoken]
    )
    written = await written_by(conn, turns) if spoken else WrittenState()
    traces = await _slack_traces(conn, user_id, owned, spoken_pks)
    spoken_seqs = (
        (
            await conn.execute(
                sa.select(sessions.c.session_id, events.c.seq)
                .join(sessions, sessions.c.pk == events.c.session_pk)
                .where(turns)
            )
        ).all()
        if spoken
        else []
    )
    windows_quoting = [
        sa.and_(
            summary_windows.c.session_id == sid,
            summary_windows.c.start_seq <= seq,
            summary_windows.c.end_seq >= seq,
        )
        for sid, seq in [*spoken_seqs, *((sid, seq) for *_, sid, seq in records)]
    ]
    statements = {
        "spoken_events": sa.delete(events).where(turns) if spoken else None,
        "compactions": sa.delete(events).where(
            events.c.session_pk.in_(touched_pks), events.c.author == COMPACTION_AUTHOR
        ),
        # No compaction summary is left there: load the whole session again.
        "compaction_pointers": sa.update(sessions)
        .where(sessions.c.pk.in_(touched_pks))
        .values(compaction_seq=0, compaction_start_seq=0),
        "events": sa.delete(events).where(events.c.session_pk.in_(owned)),
        "summary_runs": sa.delete(summary_runs).where(
            sa.or_(
                summary_runs.c.session_id.in_(owned_ids),
                summary_runs.c.session_id.in_(touched_ids),
            )
        ),
        "digest_messages": sa.delete(digest_messages).where(
            digest_messages.c.digest_id.in_(cited_ids)
        ),
        "digests": sa.delete(digests).where(cited),
        "windows": sa.delete(summary_windows).where(
            sa.or_(summary_windows.c.session_id.in_(owned_ids), *windows_quoting)
        ),
        "memory": sa.delete(memory).where(
            sa.or_(
                memory.c.user_id == user_id,
                memory.c.session_id.in_(owned_ids),
                memory.c.session_id.in_(touched_ids),
            )
        ),
        "threads": sa.delete(threads).where(
            sa.or_(threads.c.user_id == user_id, threads.c.session_id.in_(owned_ids))
        ),
        # Their clicks, and every click on a reply in a session deleted with them.
        "feedback": sa.delete(feedback).where(
            sa.or_(feedback.c.user_id == user_id, feedback.c.session_id.in_(owned_ids))
        ),
        "user_state": sa.delete(user_state).where(user_state.c.user_id == user_id),
        "user_rates": sa.delete(user_rates).where(user_rates.c.user_id == user_id),
        "dm_conversations": _in_channels(dm_conversations, traces.dm_channels),
        "dm_folded": _in_channels(dm_folded, traces.dm_channels),
        "deliveries": sa.delete(deliveries).where(sa.or_(*traces.delivery_filters))
        if traces.delivery_filters
        else None,
        # Messages accepted but not yet answered carry the sender in their payload.
        "inflight": sa.delete(inflight).where(inflight.c.message["user"].as_string() == user_id),
        # Last: the statements above find the user's rows through it.
        "sessions": sa.delete(sessions).where(sessions.c.user_id == user_id),
    }
    for kind, statement in statements.items():
        count = (await conn.execute(statement)).rowcount if statement is not None else 0
        if kind != "compaction_pointers":  # reset, not deleted
            report.counts[kind] = count
    report.counts.update(await restore_written_state(conn, written))
    return report


async def affected_threads(conn: AsyncConnection, user_id: str) -> list[tuple[str, str, str]]:
    """(team, channel, thread_ts) of every thread `forget_user` would touch: the user's
    own, those whose sessions they spoke in, and those handed off from either."""
    owned = sa.select(sessions.c.session_id).where(sessions.c.user_id == user_id)
    spoken = (
        sa.select(sessions.c.session_id)
        .join(events, events.c.session_pk == sessions.c.pk)
        .where(events.c.custom_metadata[SPEAKER_ID].as_string() == user_id)
    )
    sources = [sid for (sid,) in await conn.execute(owned.union(spoken))]
    handed = [
        sid
        for *_, sid, _ in await _handoff_records(
            conn, sources, sa.select(sessions.c.pk).where(sa.false())
        )
    ]
    rows = await conn.execute(
        sa.select(threads.c.team_id, threads.c.channel_id, threads.c.thread_ts).where(
            sa.or_(threads.c.user_id == user_id, threads.c.session_id.in_(sources + handed))
        )
    )
    return sorted({(team, channel, ts) for team, channel, ts in rows})


@dataclass
class _SlackTraces:
    """Where the user's Slack messages left keys: their DM channels, and the delivery
    keys naming those channels or their messages."""

    dm_channels: list[tuple[str, str]]
    delivery_filters: list[sa.ColumnElement[bool]]


async def _slack_traces(
    conn: AsyncConnection, user_id: str, owned: sa.Select[Any], spoken_pks: set[int]
) -> _SlackTraces:
    # The channel of each of their messages, through its session's thread.
    sent = await conn.execute(
        sa.select(threads.c.team_id, threads.c.channel_id, events.c.custom_metadata)
        .join(sessions, sessions.c.pk == events.c.session_pk)
        .join(threads, threads.c.session_id == sessions.c.session_id)
        .where(
            events.c.author == "user",
            sa.or_(
                events.c.session_pk.in_(owned),
                sa.and_(
                    events.c.session_pk.in_(spoken_pks),
                    events.c.custom_metadata[SPEAKER_ID].as_string() == user_id,
                ),
            ),
        )
    )
    keys = {
        f"message:{team}:{channel}:{meta[SLACK_TS]}"
        for team, channel, meta in sent
        if isinstance(meta, dict) and isinstance(meta.get(SLACK_TS), str)
    }
    # Their messages accepted but never answered (deleted below with `inflight`).
    pending = sa.select(inflight.c.team_id, inflight.c.channel_id, inflight.c.message_ts).where(
        inflight.c.message["user"].as_string() == user_id
    )
    keys |= {f"message:{team}:{channel}:{ts}" for team, channel, ts in await conn.execute(pending)}
    mine = sa.select(threads.c.team_id, threads.c.channel_id).where(threads.c.user_id == user_id)
    channels = {(team, channel) for team, channel in await conn.execute(mine)}
    # A DM is the person's with the bot alone: every row and delivery of it is theirs.
    dms = sorted(
        {
            (team, channel)
            for table in (dm_conversations, dm_folded)
            for team, channel in await conn.execute(
                sa.select(table.c.team_id, table.c.channel_id).where(
                    sa.tuple_(table.c.team_id, table.c.channel_id).in_(sorted(channels))
                )
            )
        }
        if channels
        else set()
    )
    filters: list[sa.ColumnElement[bool]] = [
        deliveries.c.key.startswith(f"message:{team}:{channel}:", autoescape=True)
        for team, channel in dms
    ]
    if keys:
        filters.append(deliveries.c.key.in_(sorted(keys)))
    return _SlackTraces(dm_channels=dms, delivery_filters=filters)


def _in_channels(table: sa.Table, channels: list[tuple[str, str]]) -> sa.Delete | None:
    if not channels:
        return None
    return sa.delete(table).where(sa.tuple_(table.c.team_id, table.c.channel_id).in_(channels))


async def _handoff_records(
    conn: AsyncConnection, sources: list[str], owned: sa.Select[Any]
) -> list[tuple[int, int, str, int]]:
    """(event pk, session pk, session id, seq) of each hand-off record made from one of
    `sources`, or from a session handed off from them, in sessions not in `owned`."""
    found: dict[int, tuple[int, int, str, int]] = {}
    seen, frontier = set(sources), list(sources)
    while frontier:
        handed = sa.select(threads.c.session_id).where(threads.c.source_session_id.in_(frontier))
        rows = await conn.execute(
            sa.select(events.c.pk, sessions.c.pk, sessions.c.session_id, events.c.seq)
            .join(sessions, sessions.c.pk == events.c.session_pk)
            .where(
                events.c.author == HANDOFF_AUTHOR,
                events.c.session_pk.not_in(owned),
                sa.or_(
                    events.c.custom_metadata[HANDOFF_SOURCE].as_string().in_(frontier),
                    sessions.c.session_id.in_(handed),
                ),
            )
        )
        frontier = []
        for event_pk, session_pk, session_id, seq in rows:
            found[event_pk] = (event_pk, session_pk, session_id, seq)
            if session_id not in seen:
                seen.add(session_id)
                frontier.append(session_id)
    return list(found.values())


async def _redact(conn: AsyncConnection, event_pks: list[int]) -> int:
    """Replace the text of each hand-off record in `event_pks`; its routing stays."""
    rows = await conn.execute(
        sa.select(events.c.pk, events.c.data).where(events.c.pk.in_(event_pks))
    )
    for pk, data in rows.all():
        event = Event.model_validate_json(data)
        redacted = event.model_copy(update={"parts": (Part(text=HANDOFF_REDACTED),)})
        await conn.execute(
            sa.update(events).where(events.c.pk == pk).values(data=redacted.model_dump_json())
        )
    return len(event_pks)
