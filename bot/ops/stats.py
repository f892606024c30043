"""`support-bot stats`: the figures `/metrics` reports, from what the database keeps.

`/metrics` counts in one process since it started; the database holds the same facts
for every process and all time: each invocation starts with a stored user event, each
model answer's event carries its usage and cost, transfers and compactions are events,
summary runs and digests have their own rows, flagged threads are marked in the thread
map. `collect` reads them; `render_table` prints them. A process's own counters (the
terminal chat's, or a running bot's `/metrics` page) can be shown beside them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from storage.schema import digests, events, sessions, threads

Row = tuple[str, str]

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")


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
    digests_stored: int = 0
    digests_posted: int = 0
    threads: dict[str, int] = field(default_factory=dict)
    threads_flagged: int = 0


async def collect(db: Any) -> Stats:
    """Read the figures from `db` (a `storage.database.Database`).

    Usage, transfers and compactions come from the event rows that can hold them (a
    LIKE on the stored JSON narrows the scan); the rest are aggregate queries.
    """
    stats = Stats(summaries=await db.summary_runs.totals())

    async def tx(conn: Any) -> None:
        scalar = conn.scalar
        stats.sessions = int(await scalar(sa.select(sa.func.count()).select_from(sessions)))
        stats.events = int(await scalar(sa.select(sa.func.count()).select_from(events)))
        stats.invocations = int(
            await scalar(sa.select(sa.func.count()).where(events.c.author == "user"))
        )
        stats.digests_stored = int(await scalar(sa.select(sa.func.count()).select_from(digests)))
        stats.digests_posted = int(
            await scalar(sa.select(sa.func.count()).where(digests.c.slack_ts.is_not(None)))
        )
        stats.threads_flagged = int(
            await scalar(sa.select(sa.func.count()).where(threads.c.needs_attention))
        )
        by_status = sa.select(threads.c.status, sa.func.count()).group_by(threads.c.status)
        stats.threads = {status: int(n) for status, n in await conn.execute(by_status)}
        interesting = sa.select(events.c.data).where(
            events.c.author != "user",
            sa.or_(
                events.c.data.like('%"usage":{%'),
                events.c.data.like('%"transfer_to_agent":"%'),
                events.c.data.like('%"compaction":{%'),
                events.c.data.like('%"error_code":"%'),
            ),
        )
        for (data,) in await conn.execute(interesting):
            _count_event(stats, data)

    await db.gate.read(tx)
    return stats


def _count_event(stats: Stats, data: str) -> None:
    try:
        event = json.loads(data)
    except ValueError:
        return  # a corrupt row is reported by the session loader, not here
    author = str(event.get("author"))
    usage = event.get("usage")
    if isinstance(usage, dict):
        agent = stats.usage.setdefault(author, AgentUsage())
        agent.calls += 1
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


def stats_rows(stats: Stats) -> list[Row]:
    """(figure, value) rows, in the order `/metrics` lists them."""
    summaries = stats.summaries
    rows: list[Row] = [
        ("sessions", str(stats.sessions)),
        ("invocations (user messages)", str(stats.invocations)),
        ("failed turns", str(stats.failed_turns)),
    ]
    for agent, use in sorted(stats.usage.items()):
        rows.append(
            (
                f"model calls [{agent}]",
                f"{use.calls} calls, {use.prompt_tokens}+{use.completion_tokens} tokens, "
                f"${use.cost:.6f}",
            )
        )
    for (source, target), count in sorted(stats.transfers.items()):
        rows.append((f"transfers {source} → {target}", str(count)))
    count = int(summaries.get("count", 0))
    rows += [
        ("compactions written", str(stats.compactions)),
        ("summaries", str(count)),
        ("summary first-attempt pass rate", _rate(summaries, "first_attempt_pass_rate", count)),
        ("summary fallback rate", _rate(summaries, "fallback_rate", count)),
        ("cost per summary", f"${float(summaries.get('cost_per_summary', 0.0)):.6f}"),
        ("digests stored", str(stats.digests_stored)),
        ("digests posted", str(stats.digests_posted)),
        (
            "threads",
            ", ".join(f"{n} {s}" for s, n in sorted(stats.threads.items())) or "0",
        ),
        ("threads flagged for a person", str(stats.threads_flagged)),
    ]
    return rows


def _rate(summaries: Mapping[str, Any], key: str, count: int) -> str:
    return f"{float(summaries.get(key, 0.0)):.1%}" if count else "n/a"


def registry_rows(text: str, *, skip: Iterable[str] = ()) -> list[Row]:
    """Non-zero samples of a Prometheus text page (a `/metrics` body, or
    `REGISTRY.render_prometheus()`), as rows."""
    skipped = set(skip)
    rows: list[Row] = []
    for line in text.splitlines():
        match = _SAMPLE.match(line.strip())
        if not match or line.startswith("#") or match.group(1) in skipped:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        if value:
            rows.append((match.group(1) + (match.group(2) or ""), f"{value:g}"))
    return rows


def render_table(sections: Mapping[str, list[Row]]) -> str:
    """Aligned two-column tables, one per titled section."""
    rows = [r for section in sections.values() for r in section]
    width = max((len(name) for name, _ in rows), default=10)
    out: list[str] = []
    for title, section in sections.items():
        out.append(title)
        out.append("-" * len(title))
        if not section:
            out.append("(nothing yet)")
        out.extend(f"{name:<{width}}  {value}" for name, value in section)
        out.append("")
    return "\n".join(out).rstrip() + "\n"
