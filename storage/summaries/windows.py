"""Window records: each window of a session's events with its validated record or gap.

Implements `agents.summary.windows.WindowStore`. Saving a window replaces every stored
window of the session whose range overlaps it, in one transaction, so a rebuilt window
(its events changed) never sits beside the one it replaces.
"""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agents.summary.windows import StoredWindow, WindowSpan
from storage.engine import SqlGate
from storage.schema import summary_windows


def _window(row: Any) -> StoredWindow:
    data = row._mapping
    return StoredWindow(
        span=WindowSpan(
            start_seq=data["start_seq"],
            end_seq=data["end_seq"],
            start_id=data["start_event_id"],
            end_id=data["end_event_id"],
            fingerprint=data["fingerprint"],
            closed=bool(data["closed"]),
        ),
        status=data["status"],
        record=data["record"],
        problems=tuple(data["problems"]),
        attempts=data["attempts"],
        first_attempt_pass=bool(data["first_attempt_pass"]),
        prompt_tokens=data["prompt_tokens"],
        completion_tokens=data["completion_tokens"],
        cost=data["cost"],
        latency_s=data["latency_s"],
        closed_by=data["closed_by"],
    )


class WindowStore:
    """Stores and lists window records per session."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate

    async def windows(self, session_id: str) -> list[StoredWindow]:
        """Every stored window of `session_id`, in event order."""
        query = (
            sa.select(summary_windows)
            .where(summary_windows.c.session_id == session_id)
            .order_by(summary_windows.c.start_seq)
        )

        async def tx(conn: AsyncConnection) -> list[StoredWindow]:
            return [_window(row) for row in await conn.execute(query)]

        return await self._gate.read(tx)

    async def save(self, session_id: str, window: StoredWindow) -> None:
        """Store `window`, replacing the session's stored windows it overlaps."""
        span = window.span
        values = {
            "session_id": session_id,
            "start_seq": span.start_seq,
            "end_seq": span.end_seq,
            "start_event_id": span.start_id,
            "end_event_id": span.end_id,
            "fingerprint": span.fingerprint,
            "closed": span.closed,
            "status": window.status,
            "record": window.record,
            "problems": list(window.problems),
            "attempts": window.attempts,
            "first_attempt_pass": window.first_attempt_pass,
            "prompt_tokens": window.prompt_tokens,
            "completion_tokens": window.completion_tokens,
            "cost": window.cost,
            "latency_s": window.latency_s,
            "closed_by": window.closed_by,
            "created_at": time.time(),
        }
        overlapping = sa.delete(summary_windows).where(
            summary_windows.c.session_id == session_id,
            summary_windows.c.start_seq <= span.end_seq,
            summary_windows.c.end_seq >= span.start_seq,
        )

        async def tx(conn: AsyncConnection) -> None:
            await conn.execute(overlapping)
            await conn.execute(sa.insert(summary_windows).values(values))

        await self._gate.write(tx)
