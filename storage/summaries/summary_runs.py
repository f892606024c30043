"""Summary runs: one row per summary-agent run, for the quality figures the summary
seed asks to track (first-attempt pass rate, fallback rate, cost per summary)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.schema import summary_runs


class SummaryRun(Protocol):
    """What `SummaryRunStore.add` reads from a run; any object with these attributes
    (read-only here, so a frozen dataclass fits)."""

    @property
    def session_id(self) -> str: ...

    @property
    def first_attempt_pass(self) -> bool: ...

    @property
    def fallback(self) -> bool: ...

    @property
    def attempts(self) -> int: ...

    @property
    def problems(self) -> Sequence[object]: ...

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...

    @property
    def cost(self) -> float: ...

    @property
    def latency_s(self) -> float: ...

    @property
    def model(self) -> str | None: ...


class SummaryRunStore:
    """Records summary runs and reports their totals."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate

    async def add(self, run: SummaryRun, *, created_at: float | None = None) -> int:
        """Store one run; returns its id."""
        values = {
            "session_id": run.session_id,
            "first_attempt_pass": bool(run.first_attempt_pass),
            "fallback": bool(run.fallback),
            "attempts": int(run.attempts),
            "problems": [str(p) for p in run.problems],
            "prompt_tokens": int(run.prompt_tokens),
            "completion_tokens": int(run.completion_tokens),
            "cost": float(run.cost),
            "latency_s": float(run.latency_s),
            "model": run.model,
            "created_at": time.time() if created_at is None else created_at,
        }

        async def tx(conn: AsyncConnection) -> int:
            result = await conn.execute(
                sa.insert(summary_runs).values(values).returning(summary_runs.c.id)
            )
            return int(result.scalar_one())

        return await self._gate.write(tx)

    async def totals(self) -> dict[str, Any]:
        """count, first_attempt_pass_rate, fallback_rate, cost_per_summary (total cost over
        all runs) and total_cost; rates are 0.0 when there are no runs."""
        query = sa.select(
            sa.func.count(),
            sa.func.sum(sa.case((summary_runs.c.first_attempt_pass, 1), else_=0)),
            sa.func.sum(sa.case((summary_runs.c.fallback, 1), else_=0)),
            sa.func.sum(summary_runs.c.cost),
        )

        async def tx(conn: AsyncConnection) -> dict[str, Any]:
            count, passed, fallbacks, cost = (await conn.execute(query)).one()
            total_cost = float(cost or 0.0)
            return {
                "count": int(count),
                "first_attempt_pass_rate": (passed or 0) / count if count else 0.0,
                "fallback_rate": (fallbacks or 0) / count if count else 0.0,
                "cost_per_summary": total_cost / count if count else 0.0,
                "total_cost": total_cost,
            }

        return await self._gate.read(tx)
