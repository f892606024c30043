"""Process-wide counters and gauges, kept by `prometheus_client`.

The runtime counts what it does here (model calls, tokens, transfers, compactions,
summaries); `bot` exposes the registry on `/metrics` and in `support-bot stats`. Callers
name a metric once with `describe` (its type and help text) and then count by name with
labels as keywords: `REGISTRY.inc("support_bot_transfers_total", **{"from": a, "to": b})`.
"""

from __future__ import annotations

import threading
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, disable_created_metrics
from prometheus_client.exposition import generate_latest

from agents.events import Event, Usage

Kind = Literal["counter", "gauge"]

# One sample per series: the `_created` timestamps would double every counter on the page.
disable_created_metrics()


class Registry:
    """A `CollectorRegistry` owned by the process, with metrics looked up by name.

    A metric is created on first use, with the label names of that first call (every
    later call must use the same ones); its type and help text come from `describe`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._described: dict[str, tuple[Kind, str]] = {}
        self._metrics: dict[str, Counter | Gauge] = {}
        # (name, labels) -> its series: prometheus_client's `labels()` validates and
        # locks on every call, and the hot path counts a few series per message.
        self._children: dict[tuple[str, tuple[tuple[str, str], ...]], Counter | Gauge] = {}
        self.collectors = CollectorRegistry(auto_describe=True)

    def describe(self, name: str, kind: Kind, help_text: str) -> None:
        """Declare `name` as a counter or a gauge, with the help text `/metrics` shows."""
        with self._lock:
            self._described[name] = (kind, help_text)

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        """Add `amount` to a counter (or a gauge) series."""
        self._series(name, labels).inc(amount)

    def set(self, name: str, value: float, **labels: str) -> None:
        """Set a gauge series."""
        series = self._series(name, labels)
        if not isinstance(series, Gauge):
            raise TypeError(f"{name} is a counter; only gauges are set")
        series.set(value)

    def get(self, name: str, **labels: str) -> float:
        """The value of one series, or the sum over all series when no labels are given."""
        with self._lock:
            metric = self._metrics.get(name)
        if metric is None:
            return 0.0
        wanted = {k: str(v) for k, v in labels.items()}
        return sum(
            sample.value
            for family in metric.collect()
            for sample in family.samples
            if sample.name == name and wanted.items() <= sample.labels.items()
        )

    def reset(self) -> None:
        """Forget every value (descriptions stay): a fresh registry, for tests."""
        with self._lock:
            self._metrics.clear()
            self._children.clear()
            self.collectors = CollectorRegistry(auto_describe=True)

    def exposition(self) -> bytes:
        """The Prometheus text page of every series counted so far."""
        return generate_latest(self.collectors)

    def _series(self, name: str, labels: dict[str, str]) -> Counter | Gauge:
        key = (name, tuple(labels.items()))
        series = self._children.get(key)
        if series is not None:
            return series
        with self._lock:
            metric = self._metrics.get(name)
            if metric is None:
                metric = self._metrics[name] = self._create(name, sorted(labels))
            series = metric.labels(**labels) if labels else metric
            self._children[key] = series
        return series

    def _create(self, name: str, labelnames: list[str]) -> Counter | Gauge:
        if name not in self._described:
            raise KeyError(f"metric {name} is used before REGISTRY.describe() names its type")
        kind, help_text = self._described[name]
        if kind == "gauge":
            return Gauge(name, help_text, labelnames, registry=self.collectors)
        # prometheus_client appends `_total` to a counter's samples, so it takes the stem.
        stem = name.removesuffix("_total")
        if stem == name:
            raise ValueError(f"counter {name} must end in _total")
        return Counter(stem, help_text, labelnames, registry=self.collectors)


REGISTRY = Registry()

_RUNTIME_METRICS: tuple[tuple[str, Kind, str], ...] = (
    ("support_bot_invocations_total", "counter", "Agent invocations run"),
    ("support_bot_model_calls_total", "counter", "Model calls, by agent"),
    ("support_bot_model_tokens_total", "counter", "Model tokens, by agent and kind"),
    ("support_bot_model_cost_usd_total", "counter", "Model cost in USD, by agent"),
    ("support_bot_transfers_total", "counter", "Agent transfers, by from and to"),
    ("support_bot_compaction_runs_total", "counter", "Compactions written"),
    ("support_bot_compaction_failures_total", "counter", "Compactions that failed"),
    ("support_bot_summaries_total", "counter", "Summaries, by outcome"),
    ("support_bot_digests_posted_total", "counter", "Digests posted to the lead channel"),
)
for _name, _kind, _help in _RUNTIME_METRICS:
    REGISTRY.describe(_name, _kind, _help)


def event_model_use(event: Event) -> dict[str, Usage]:
    """The model use `event` stands for, by agent, each with its calls counted
    (`Usage.model_calls`): its own answer's, under its author, and what the calls behind
    its function responses used (an AgentTool's consulted agents,
    `FunctionResponse.model_use`)."""
    use: dict[str, Usage] = {}
    spent = [(event.author, event.usage)] if event.usage is not None else []
    spent += [(a, u) for r in event.function_responses for a, u in r.model_use.items()]
    for agent, usage in spent:
        counted = usage.model_copy(update={"calls": usage.model_calls})
        use[agent] = use[agent] + counted if agent in use else counted
    return use


def count_event_model_use(event: Event) -> None:
    """Count everything `event` stands for (`event_model_use`) in `REGISTRY`."""
    for agent, usage in event_model_use(event).items():
        count_model_use(agent, usage)


def count_model_use(agent: str, usage: Usage) -> None:
    """Count `agent`'s model calls (`usage.model_calls`), tokens and cost in `REGISTRY`."""
    REGISTRY.inc("support_bot_model_calls_total", usage.model_calls, agent=agent)
    REGISTRY.inc("support_bot_model_tokens_total", usage.prompt_tokens, agent=agent, kind="prompt")
    REGISTRY.inc(
        "support_bot_model_tokens_total", usage.completion_tokens, agent=agent, kind="completion"
    )
    REGISTRY.inc("support_bot_model_cost_usd_total", usage.cost, agent=agent)
