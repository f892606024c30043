"""Digests: validated handoff records, with what it took to produce and post them.

A row of kind `unavailable` is the durable intent of a "summary unavailable" notice: no
record passed validation, and `problems` says why. Either kind is stored once per
`(session, last event)` before it is posted."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.schema import digest_messages, digests
from storage.threads import ThreadKey

DigestKind = Literal["digest", "unavailable"]


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
    kind: DigestKind = "digest"


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
        kind: DigestKind = "digest",
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
            "kind": kind,
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

    async def set_posted(self, digest_id: int, slack_ts: str, *, page: int = 1) -> bool:
        """Record that page `page` of the digest was posted as `slack_ts` (the first page's
        ts is the digest's own); False if there is no such digest."""
        record = self._gate.insert(digest_messages).values(
            digest_id=digest_id, page=page, ts=slack_ts
        )
        record = record.on_conflict_do_update(
            index_elements=[digest_messages.c.digest_id, digest_messages.c.page],
            set_={"ts": slack_ts},
        )

        async def tx(conn: AsyncConnection) -> bool:
            exists = sa.select(digests.c.id).where(digests.c.id == digest_id)
            if (await conn.execute(exists)).first() is None:
                return False
            await conn.execute(record)
            if page == 1:
                first = sa.update(digests).where(digests.c.id == digest_id)
                await conn.execute(first.values(slack_ts=slack_ts))
            return True

        return await self._gate.write(tx)

    async def posted_pages(self, digest_id: int) -> dict[int, str]:
        """The pages of the digest posted so far: page number -> Slack ts."""
        pages = sa.select(digest_messages.c.page, digest_messages.c.ts).where(
            digest_messages.c.digest_id == digest_id
        )
        first = sa.select(digests.c.slack_ts).where(digests.c.id == digest_id)

        async def tx(conn: AsyncConnection) -> dict[int, str]:
            posted = {int(page): str(ts) for page, ts in await conn.execute(pages)}
            # A digest posted before pages were recorded has only its first page's ts.
            slack_ts = (await conn.execute(first)).scalar()
            if slack_ts is not None:
                posted.setdefault(1, str(slack_ts))
            return posted

        return await self._gate.read(tx)

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

    async def thread_message(
        self, session_id: str, *, before: int
    ) -> tuple[DigestRow, dict[int, str]] | None:
        """The message a thread has in the lead channel: the newest digest (or notice)
        of `session_id` older than digest `before` that was posted, with its pages
        (page -> ts); None when none was."""
        newest = (
            sa.select(digests)
            .where(
                digests.c.source_session_id == session_id,
                digests.c.id < before,
                digests.c.slack_ts.is_not(None),
            )
            .order_by(digests.c.id.desc())
            .limit(1)
        )

        async def tx(conn: AsyncConnection) -> tuple[DigestRow, dict[int, str]] | None:
            row = (await conn.execute(newest)).first()
            if row is None:
                return None
            shown = _row(row)
            pages = sa.select(digest_messages.c.page, digest_messages.c.ts).where(
                digest_messages.c.digest_id == shown.id
            )
            posted = {int(page): str(ts) for page, ts in await conn.execute(pages)}
            posted.setdefault(1, str(shown.slack_ts))
            return shown, posted

        return await self._gate.read(tx)

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
