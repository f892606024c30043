"""Process-wide counters and histograms, rendered as Prometheus text by the bot.

The runtime counts what it does here (model calls, tokens, transfers, compactions,
summaries); `bot` exposes the registry on `/metrics` and in `support-bot stats`.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable

Labels = tuple[tuple[str, str], ...]


class Registry:
    """A minimal, thread-safe metric registry: counters and gauges with labels."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, dict[Labels, float]] = defaultdict(dict)
        self._help: dict[str, tuple[str, str]] = {}

    def describe(self, name: str, kind: str, help_text: str) -> None:
        self._help[name] = (kind, help_text)

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            series = self._values[name]
            series[key] = series.get(key, 0.0) + amount

    def set(self, name: str, value: float, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._values[name][key] = value

    def get(self, name: str, **labels: str) -> float:
        """The value of one series, or the sum over all series when no labels are given."""
        with self._lock:
            series = self._values.get(name, {})
            if labels:
                return series.get(tuple(sorted(labels.items())), 0.0)
            return sum(series.values())

    def series(self, name: str) -> dict[Labels, float]:
        with self._lock:
            return dict(self._values.get(name, {}))

    def names(self) -> Iterable[str]:
        with self._lock:
            return sorted(set(self._values) | set(self._help))

    def reset(self) -> None:
        with self._lock:
            self._values.clear()

    def render_prometheus(self) -> str:
        lines: list[str] = []
        for name in self.names():
            kind, help_text = self._help.get(name, ("counter", name))
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            series = self.series(name) or {(): 0.0}
            for labels, value in sorted(series.items()):
                label_text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
                lines.append(
                    f"{name}{{{label_text}}} {value:g}" if label_text else f"{name} {value:g}"
                )
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


REGISTRY = Registry()

for _name, _kind, _help in (
    ("support_bot_invocations_total", "counter", "Agent invocations run"),
    ("support_bot_model_calls_total", "counter", "Model calls, by agent"),
    ("support_bot_model_tokens_total", "counter", "Model tokens, by agent and kind"),
    ("support_bot_model_cost_usd_total", "counter", "Model cost in USD, by agent"),
    ("support_bot_transfers_total", "counter", "Agent transfers, by from and to"),
    ("support_bot_compaction_runs_total", "counter", "Compactions written"),
    ("support_bot_compaction_failures_total", "counter", "Compactions that failed"),
    ("support_bot_summaries_total", "counter", "Summaries, by outcome"),
    ("support_bot_digests_posted_total", "counter", "Digests posted to the lead channel"),
):
    REGISTRY.describe(_name, _kind, _help)
