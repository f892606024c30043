"""`support-bot stats`: the stored figures (`storage.stats`) and a running bot's
`/metrics` page, as tables.

`/metrics` counts in one process since it started; the database holds the same facts for
every process and all time. `stats_rows` and `registry_rows` turn each into rows;
`render_table` prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from storage.stats import Stats

Row = tuple[str, str]


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
    rows += _feedback_rows(stats.feedback)
    rows.append(
        (
            "knowledge-grounded replies",
            ", ".join(f"{n} {o}" for o, n in sorted(stats.knowledge_checks.items())) or "0",
        )
    )
    count = int(summaries.get("count", 0))
    rows += [
        ("compactions written", str(stats.compactions)),
        ("summaries", str(count)),
        ("summary first-attempt pass rate", _rate(summaries, "first_attempt_pass_rate", count)),
        ("summary fallback rate", _rate(summaries, "fallback_rate", count)),
        ("cost per summary", f"${float(summaries.get('cost_per_summary', 0.0)):.6f}"),
        *_delivery_rows(stats.deliveries),
        ("digests stored", str(stats.digests_stored)),
        ("digests posted", str(stats.digests_posted)),
        (
            "threads",
            ", ".join(f"{n} {s}" for s, n in sorted(stats.threads.items())) or "0",
        ),
        ("threads flagged for a person", str(stats.threads_flagged)),
    ]
    return rows


def _feedback_rows(clicks: Mapping[tuple[str, str], int]) -> list[Row]:
    """One row per agent: how many of its replies people marked helpful or unhelpful."""
    agents = sorted({agent for agent, _ in clicks})
    return [
        (
            f"feedback [{agent}]",
            f"{clicks.get((agent, 'positive'), 0)} helpful, "
            f"{clicks.get((agent, 'negative'), 0)} unhelpful",
        )
        for agent in agents
    ]


def _delivery_rows(deliveries: Mapping[str, Mapping[str, int]]) -> list[Row]:
    """Per surface: how many summaries consumers received, and the shares that were no
    summary (fallback) and partial (a record with gap windows)."""
    rows = []
    for surface, outcomes in sorted(deliveries.items()):
        total = sum(outcomes.values())
        fallback, partial = outcomes.get("none", 0) / total, outcomes.get("partial", 0) / total
        rows.append(
            (
                f"summaries delivered [{surface}]",
                f"{total}, fallback {fallback:.1%}, partial {partial:.1%}",
            )
        )
    return rows


def _rate(summaries: Mapping[str, Any], key: str, count: int) -> str:
    return f"{float(summaries.get(key, 0.0)):.1%}" if count else "n/a"


def registry_rows(text: str) -> list[Row]:
    """Non-zero samples of a Prometheus text page (a `/metrics` body), as rows."""
    rows: list[Row] = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.value:
                labels = ",".join(f'{k}="{v}"' for k, v in sample.labels.items())
                name = f"{sample.name}{{{labels}}}" if labels else sample.name
                rows.append((name, f"{sample.value:g}"))
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
