"""Routing evaluation: does the supervisor send each request to the right agent?

Each conversation's first user message goes, alone, through the support tree in a fresh
in-memory session. The agent that owns the final reply (an agent inside a workflow
counts as the workflow the supervisor transferred to, e.g. `fix_writer` is
`tech_support`) is compared with the dataset's `expected_route`, mapped to the tree's
agents by `RouteMap`. The report is the accuracy and a confusion table.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agents.base_agent import BaseAgent
from agents.models.base import Model
from agents.runner import Runner
from agents.sessions.service import InMemorySessionService
from bot.threads.turn import run_turn

DEFAULT_ROUTES = {"billing": "billing_agent", "tech_support": "tech_support"}
FALLBACK_AGENT = "support_supervisor"
FAILED = "(failed)"
EVAL_APP = "routing_eval"


@dataclass(frozen=True)
class RouteMap:
    """Dataset route -> tree agent; unlisted routes go to `fallback` (the supervisor)."""

    routes: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_ROUTES))
    fallback: str = FALLBACK_AGENT

    @classmethod
    def parse(cls, text: str | None, *, fallback: str = FALLBACK_AGENT) -> RouteMap:
        """`"billing=billing_agent,tech_support=tech_support"`; `*=agent` sets the fallback.
        Listed routes are added to (and override) the defaults."""
        routes = dict(DEFAULT_ROUTES)
        for pair in (text or "").split(","):
            if not pair.strip():
                continue
            route, sep, agent = pair.partition("=")
            if not sep or not route.strip() or not agent.strip():
                raise ValueError(f"bad route mapping {pair!r}: use route=agent")
            if route.strip() == "*":
                fallback = agent.strip()
            else:
                routes[route.strip()] = agent.strip()
        return cls(routes=routes, fallback=fallback)

    def agent_for(self, route: str) -> str:
        return self.routes.get(route, self.fallback)


@dataclass(frozen=True)
class RoutingCase:
    """One conversation's first user message and its labelled route."""

    id: str
    message: str
    expected_route: str


def load_cases(path: str | Path) -> Iterator[RoutingCase]:
    """Cases from a transcripts.jsonl file; conversations with no user message are skipped."""
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            first = next(
                (e.get("text") for e in row.get("events", []) if e.get("author") == "user"), None
            )
            if first and row.get("expected_route"):
                yield RoutingCase(str(row.get("id")), str(first), str(row["expected_route"]))


def select_every_nth(cases: Sequence[RoutingCase], count: int | None) -> list[RoutingCase]:
    """Every (len // count)-th case from the first, as the summary evaluation selects."""
    if not count or count <= 0 or count >= len(cases):
        return list(cases)
    step = len(cases) // count
    return [cases[i * step] for i in range(count)]


def owning_branch(root: BaseAgent, author: str) -> str:
    """The root's child (or the root) that `author` belongs to."""
    agent = root.find_agent(author)
    if agent is None:
        return author
    while agent.parent is not None and agent.parent is not root:
        agent = agent.parent
    return agent.name


@dataclass
class RoutingReport:
    """Expected vs. actual agent per case, with accuracy and a confusion table."""

    pairs: list[tuple[str, str]] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        if not self.pairs:
            return 0.0
        return sum(1 for expected, got in self.pairs if expected == got) / len(self.pairs)

    def confusion(self) -> Counter[tuple[str, str]]:
        return Counter(self.pairs)

    def lines(self) -> list[str]:
        """Accuracy, then rows = expected agent, columns = agent that answered."""
        counts = self.confusion()
        expected = sorted({e for e, _ in self.pairs})
        got = sorted({g for _, g in self.pairs})
        correct = sum(1 for e, g in self.pairs if e == g)
        header = ["expected \\ answered", *got, "total", "accuracy"]
        table = [header]
        for row in expected:
            total = sum(counts[(row, g)] for g in got)
            share = f"{counts[row, row] / total:.0%}" if total else "-"
            table.append([row, *(str(counts[row, g]) for g in got), str(total), share])
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        out = [f"routing accuracy: {self.accuracy:.1%} ({correct} of {len(self.pairs)})", ""]
        for r in table:
            out.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)))
        return out


async def evaluate_routing(
    cases: Sequence[RoutingCase],
    *,
    tree: Callable[[], BaseAgent],
    routes: RouteMap,
    model_factory: Callable[[str], Model] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RoutingReport:
    """Run each case's message through a fresh tree and session; score the owner."""
    report = RoutingReport()
    sessions = InMemorySessionService()
    root = tree()
    runner = Runner(
        agent=root, app_name=EVAL_APP, session_service=sessions, model_factory=model_factory
    )
    for done, case in enumerate(cases, start=1):
        session = await sessions.create_session(app_name=EVAL_APP, user_id="eval")
        outcome = await run_turn(runner, user_id="eval", session_id=session.id, text=case.message)
        answered = FAILED
        if outcome.reply is not None and outcome.answered:
            answered = owning_branch(root, outcome.reply.author)
        report.pairs.append((routes.agent_for(case.expected_route), answered))
        await sessions.delete_session(app_name=EVAL_APP, user_id="eval", session_id=session.id)
        if progress is not None:
            progress(done, len(cases))
    return report
