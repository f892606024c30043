"""Digests: validated handoff records, with what it took to produce and post them."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.schema import digests
from storage.threads import ThreadKey


class DigestRow(BaseModel):
    """One stored digest."""

    id: int
    record: dict[str, Any]
    source_session_id: str
    user_id: str | None = None
    thread: ThreadKey | None = None
    cited_event_ids: list[str]
    attempts: int
    problems: list[str]
    cost: float
    prompt_tokens: int
    completion_tokens: int
    slack_ts: str | None = None
    supersedes_digest_id: int | None = None
    created_at: float
    last_seq: int | None = None


def _row(row: Any) -> DigestRow:
    data = dict(row._mapping)
    team_id, channel_id, thread_ts = (data.pop(k) for k in ("team_id", "channel_id", "thread_ts"))
    thread = None
    if team_id is not None and channel_id is not None and thread_ts is not None:
        thread = ThreadKey(team_id=team_id, channel_id=channel_id, thread_ts=thread_ts)
    return DigestRow.model_validate({**data, "thread": thread})


class DigestStore:
    """Adds digests and finds them again."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate

    async def add(
        self,
        *,
        record: Mapping[str, Any] | BaseModel,
        source_session_id: str,
        thread: ThreadKey | None = None,
        user_id: str | None = None,
        cited_event_ids: Sequence[str] = (),
        attempts: int = 1,
        problems: Sequence[str] = (),
        cost: float = 0.0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        slack_ts: str | None = None,
        supersedes_digest_id: int | None = None,
        created_at: float | None = None,
        last_seq: int | None = None,
    ) -> int:
        """Store a digest; returns its id. `user_id` lets a deletion request find it.

        With `last_seq` (the session's last event it covers) the digest is idempotent:
        when that `(session, last event)` already has one, nothing is written and the
        existing digest's id is returned."""
        body = record.model_dump(mode="json") if isinstance(record, BaseModel) else dict(record)
        values = {
            "record": body,
            "source_session_id": source_session_id,
            "user_id": user_id,
            "team_id": thread.team_id if thread else None,
            "channel_id": thread.channel_id if thread else None,
            "thread_ts": thread.thread_ts if thread else None,
            "cited_event_ids": list(cited_event_ids),
            "attempts": attempts,
            "problems": list(problems),
            "cost": cost,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "slack_ts": slack_ts,
            "supersedes_digest_id": supersedes_digest_id,
            "created_at": time.time() if created_at is None else created_at,
            "last_seq": last_seq,
        }

        async def tx(conn: AsyncConnection) -> int:
            insert = self._gate.insert(digests).values(values).on_conflict_do_nothing()
            inserted = (await conn.execute(insert.returning(digests.c.id))).first()
            if inserted is not None:
                return int(inserted[0])
            existing = sa.select(digests.c.id).where(
                digests.c.source_session_id == source_session_id, digests.c.last_seq == last_seq
            )
            return int((await conn.execute(existing)).scalar_one())

        return await self._gate.write(tx)

    async def set_posted(self, digest_id: int, slack_ts: str) -> bool:
        """Record the Slack ts the digest was posted as; False if there is no such digest."""

        async def tx(conn: AsyncConnection) -> bool:
            result = await conn.execute(
                sa.update(digests)
                .where(digests.c.id == digest_id)
                .values(slack_ts=slack_ts)
                .returning(digests.c.id)
            )
            return result.first() is not None

        return await self._gate.write(tx)

    async def for_event(self, session_id: str, last_seq: int) -> DigestRow | None:
        """The digest of `session_id` that covers up to its event `last_seq`, if any."""
        query = sa.select(digests).where(
            digests.c.source_session_id == session_id, digests.c.last_seq == last_seq
        )
        return await self._one(query)

    async def get(self, digest_id: int) -> DigestRow | None:
        return await self._one(sa.select(digests).where(digests.c.id == digest_id))

    async def latest_for_session(self, session_id: str) -> DigestRow | None:
        """The newest digest of `session_id`."""
        query = (
            sa.select(digests)
            .where(digests.c.source_session_id == session_id)
            .order_by(digests.c.id.desc())
            .limit(1)
        )
        return await self._one(query)

    async def list_recent(self, limit: int = 20) -> list[DigestRow]:
        """Newest first."""
        query = sa.select(digests).order_by(digests.c.id.desc()).limit(limit)

        async def tx(conn: AsyncConnection) -> list[DigestRow]:
            return [_row(row) for row in await conn.execute(query)]

        return await self._gate.read(tx)

    async def _one(self, query: sa.Select[Any]) -> DigestRow | None:
        async def tx(conn: AsyncConnection) -> DigestRow | None:
            row = (await conn.execute(query)).first()
            return None if row is None else _row(row)

        return await self._gate.read(tx)
