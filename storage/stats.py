"""`StatsStore`: the operating figures `/metrics` reports, read back from what is stored.

`/metrics` counts in one process since it started; the database holds the same facts
for every process and all time: each invocation starts with a stored user event, each
model answer's event carries its usage and cost, transfers and compactions are events,
summary runs, digests and feedback clicks have their own rows, flagged threads are
marked in the thread map.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import SqlGate
from storage.schema import digests, events, feedback, sessions, threads
from storage.summaries.summary_deliveries import SummaryDeliveryStore
from storage.summaries.summary_runs import SummaryRunStore


@dataclass
class AgentUsage:
    """Model calls, tokens and cost of one agent."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


@dataclass
class Stats:
    """Persisted operating figures."""

    sessions: int = 0
    invocations: int = 0
    events: int = 0
    usage: dict[str, AgentUsage] = field(default_factory=dict)
    transfers: dict[tuple[str, str], int] = field(default_factory=dict)
    compactions: int = 0
    failed_turns: int = 0
    summaries: dict[str, Any] = field(default_factory=dict)
    # Summaries consumers received, per surface (digest, summary, handoff) and outcome
    # (validated, partial, none).
    deliveries: dict[str, dict[str, int]] = field(default_factory=dict)
    digests_stored: int = 0
    digests_posted: int = 0
    threads: dict[str, int] = field(default_factory=dict)
    threads_flagged: int = 0
    # Feedback clicks on replies per (agent, value), one per person and reply.
    feedback: dict[tuple[str, str], int] = field(default_factory=dict)
    # Knowledge-grounded replies by the outcome of their check (supported, rewritten, ...).
    knowledge_checks: dict[str, int] = field(default_factory=dict)


class StatsStore:
    """Aggregate queries over the other stores' tables, for `support-bot stats`."""

    def __init__(
        self,
        gate: SqlGate,
        summary_runs: SummaryRunStore,
        summary_deliveries: SummaryDeliveryStore,
    ) -> None:
        self._gate = gate
        self._summary_runs = summary_runs
        self._summary_deliveries = summary_deliveries

    async def collect(self) -> Stats:
        """Every figure at once.

        Usage, transfers and compactions come from the event rows that can hold them (a
        LIKE on the stored JSON narrows the scan); the rest are aggregate queries.
        """
        stats = Stats(
            summaries=await self._summary_runs.totals(),
            deliveries=await self._summary_deliveries.counts(),
        )

        async def tx(conn: AsyncConnection) -> None:
            async def count(query: Any) -> int:
                return int(await conn.scalar(query) or 0)

            stats.sessions = await count(sa.select(sa.func.count()).select_from(sessions))
            stats.events = await count(sa.select(sa.func.count()).select_from(events))
            stats.invocations = await count(
                sa.select(sa.func.count()).where(events.c.author == "user")
            )
            # "summary unavailable" notices are stored as digest rows too; not counted.
            records = digests.c.kind == "digest"
            stats.digests_stored = await count(sa.select(sa.func.count()).where(records))
            stats.digests_posted = await count(
                sa.select(sa.func.count()).where(records, digests.c.slack_ts.is_not(None))
            )
            stats.threads_flagged = await count(
                sa.select(sa.func.count()).where(threads.c.needs_attention)
            )
            by_status = sa.select(threads.c.status, sa.func.count()).group_by(threads.c.status)
            stats.threads = {status: int(n) for status, n in await conn.execute(by_status)}
            clicks = sa.select(feedback.c.agent, feedback.c.value, sa.func.count()).group_by(
                feedback.c.agent, feedback.c.value
            )
            stats.feedback = {(a, v): int(n) for a, v, n in await conn.execute(clicks)}
            interesting = sa.select(events.c.data).where(
                events.c.author != "user",
                sa.or_(
                    events.c.data.like('%"usage":{%'),
                    events.c.data.like('%"model_use":{"%'),
                    events.c.data.like('%"transfer_to_agent":"%'),
                    events.c.data.like('%"compaction":{%'),
                    events.c.data.like('%"error_code":"%'),
                    events.c.data.like('%"knowledge_check":"%'),
                ),
            )
            for (data,) in await conn.execute(interesting):
                _count_event(stats, data)

        await self._gate.read(tx)
        return stats


def _count_event(stats: Stats, data: str) -> None:
    try:
        event = json.loads(data)
    except ValueError:
        return  # a corrupt row is reported by the session loader, not here
    author = str(event.get("author"))
    spent = [(author, event.get("usage"))]
    # An AgentTool's consulted agents, by name (`FunctionResponse.model_use`).
    for part in event.get("parts") or ():
        response = (part or {}).get("function_response") or {}
        spent += list((response.get("model_use") or {}).items())
    for name, usage in spent:
        if isinstance(usage, dict):
            agent = stats.usage.setdefault(str(name), AgentUsage())
            # A decide-first step's answer stands for its 2-4 calls (`Usage.calls`).
            agent.calls += max(1, int(usage.get("calls") or 0))
            agent.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            agent.completion_tokens += int(usage.get("completion_tokens") or 0)
            agent.cost += float(usage.get("cost") or 0.0)
    actions = event.get("actions") or {}
    target = actions.get("transfer_to_agent")
    if target:
        pair = (author, str(target))
        stats.transfers[pair] = stats.transfers.get(pair, 0) + 1
    if actions.get("compaction"):
        stats.compactions += 1
    if event.get("error_code"):
        stats.failed_turns += 1
    check = (event.get("custom_metadata") or {}).get("knowledge_check")
    if isinstance(check, str):
        stats.knowledge_checks[check] = stats.knowledge_checks.get(check, 0) + 1
