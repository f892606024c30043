"""Memory: facts, commitments and user claims from validated summaries, searchable per user.

A summary item labelled a user claim is stored as a `claim`, never as a fact or a
commitment: what only the user said stays marked as the user's in memory too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Literal

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.schema import memory

MemoryKind = Literal["fact", "commitment", "claim"]
MEMORY_KINDS: tuple[MemoryKind, ...] = ("fact", "commitment", "claim")


class MemoryItem(BaseModel):
    """One remembered fact, commitment or user claim, with the events it came from."""

    id: int
    user_id: str
    session_id: str
    kind: MemoryKind
    text: str
    event_ids: list[str]
    created_at: float


class MemoryStore:
    """Adds and searches a user's memory."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate

    async def add(
        self,
        *,
        user_id: str,
        session_id: str,
        kind: MemoryKind,
        text: str,
        event_ids: Sequence[str],
        created_at: float | None = None,
    ) -> int:
        """Store one item; returns its id. An item the session already stored (same
        user, kind and text: a re-digest of the thread) is not stored again; its id is
        returned."""
        if kind not in MEMORY_KINDS:
            raise ValueError(f"unknown memory kind {kind!r}")
        values = {
            "user_id": user_id,
            "session_id": session_id,
            "kind": kind,
            "text": text,
            "event_ids": list(event_ids),
            "created_at": time.time() if created_at is None else created_at,
        }

        same = sa.select(memory.c.id).where(
            memory.c.user_id == user_id,
            memory.c.session_id == session_id,
            memory.c.kind == kind,
            memory.c.text == text,
        )

        async def tx(conn: AsyncConnection) -> int:
            stored = await conn.scalar(same.limit(1))
            if stored is not None:
                return int(stored)
            result = await conn.execute(sa.insert(memory).values(values).returning(memory.c.id))
            return int(result.scalar_one())

        return await self._gate.write(tx)

    async def search(self, user_id: str, query: str = "", limit: int = 20) -> list[MemoryItem]:
        """The user's items containing every word of `query` (case-insensitive), newest
        first; all of them when `query` is empty."""
        select = sa.select(memory).where(memory.c.user_id == user_id)
        for word in query.lower().split():
            select = select.where(sa.func.lower(memory.c.text).contains(word, autoescape=True))
        select = select.order_by(memory.c.id.desc()).limit(limit)

        async def tx(conn: AsyncConnection) -> list[MemoryItem]:
            rows = await conn.execute(select)
            return [MemoryItem.model_validate(dict(row._mapping)) for row in rows]

        return await self._gate.read(tx)
