"""Routing evaluation: does the supervisor send each request to the right agent?

Each conversation's first user message goes, alone, through the support tree in a fresh
in-memory session. The agent that owns the final reply (an agent inside a workflow
counts as the workflow the supervisor transferred to, e.g. `fix_writer` is
`tech_support`) is compared with the dataset's `expected_route`, mapped to the tree's
agents by `RouteMap`. The report gives the accuracy overall and per expected agent (so a
skewed set cannot hide a route the model never takes), a confusion table (overall and per
source), the seconds per routing decision, how many replies pretended an action, how many
root decisions the examples' vote changed (and what the model alone would have scored),
and for each miss the tree's routing examples closest to its message.

A dataset can be split once into two fixed halves by a seeded hash of each case's id
(`split_half`): a team looks at one half while it writes its descriptions and examples,
and measures the other only at the end, so the figure is not one it tuned to.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import statistics
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar, cast

from agents.base_agent import BaseAgent
from agents.events import Event
from agents.llm.decide_first import Decision, observe_decisions
from agents.llm.decide_first.pretend_actions import PretendAction, find_pretend_action
from agents.llm.routing_examples import NearExample, closest_examples
from agents.models.base import Model
from agents.runner import Runner
from agents.sessions.service import InMemorySessionService
from bot.threads.turn import TurnOutcome

DEFAULT_ROUTES = {
    "billing": "billing_agent",
    "tech_support": "tech_support",
    "other": "support_supervisor",
}
FALLBACK_AGENT = "support_supervisor"
T = TypeVar("T")
FAILED = "(failed)"
EVAL_APP = "routing_eval"
Half = Literal["look", "measure"]
HALVES: tuple[Half, ...] = ("look", "measure")
SPLIT_SEED = "routing-split-1"
"""The split's seed: fixed once, so a case stays in its half from run to run."""


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
    source: str = ""


def split_half(case_id: str) -> Half:
    """The half a case belongs to, from a seeded hash of its id: "look" (to read while
    iterating) or "measure" (to measure at the end)."""
    digest = hashlib.sha256(f"{SPLIT_SEED}:{case_id}".encode()).digest()
    return HALVES[digest[0] % 2]


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
                yield RoutingCase(
                    str(row.get("id")),
                    str(first),
                    str(row["expected_route"]),
                    str(row.get("source") or ""),
                )


def select_every_nth(cases: Sequence[T], count: int | None) -> list[T]:
    """Every (len // count)-th case from the first, as the summary evaluation selects
    (the answer evaluation selects its questions the same way)."""
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


@dataclass(frozen=True)
class CaseResult:
    """One case: the agent expected and the one that answered, how long the root's first
    decision took (None for a one-call model), whether the reply shown pretended an action,
    how many pretend replies were caught on the way, and whether a refund was promised and
    the policy tool consulted."""

    expected: str
    answered: str
    decision_seconds: float | None = None
    pretend_shown: bool = False
    pretend_caught: int = 0
    refund_promised: bool = False
    policy_consulted: bool = False
    reply: str = ""
    source: str = ""
    closest: tuple[NearExample, ...] = ()
    """For a miss: the tree's routing examples closest to the message."""
    unvoted: str | None = None
    """The agent the model itself chose, when the examples' vote changed the root's first
    decision (`agents.llm.example_vote`); None when it did not."""


@dataclass
class RoutingReport:
    """Expected vs. actual agent per case: accuracy overall and per expected agent, a
    confusion table, seconds per decision and pretend-action counts."""

    results: list[CaseResult] = field(default_factory=list)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return [(r.expected, r.answered) for r in self.results]

    @property
    def accuracy(self) -> float:
        if not self.pairs:
            return 0.0
        return sum(1 for expected, got in self.pairs if expected == got) / len(self.pairs)

    def confusion(self) -> Counter[tuple[str, str]]:
        return Counter(self.pairs)

    def by_source(self) -> dict[str, RoutingReport]:
        """One report per dataset source, in order of first appearance."""
        grouped: dict[str, RoutingReport] = {}
        for result in self.results:
            grouped.setdefault(result.source or "(no source)", RoutingReport()).results.append(
                result
            )
        return grouped

    def accuracy_lines(self, title: str = "routing accuracy") -> list[str]:
        """Accuracy overall, each expected agent's on its own line, then the confusion
        table (rows = expected agent, columns = agent that answered)."""
        counts = self.confusion()
        expected = sorted({e for e, _ in self.pairs})
        got = sorted({g for _, g in self.pairs})
        correct = sum(1 for e, g in self.pairs if e == g)
        out = [f"{title}: {self.accuracy:.1%} ({correct} of {len(self.pairs)})"]
        for row in expected:
            total = sum(counts[(row, g)] for g in got)
            out.append(f"  {row}: {counts[row, row] / total:.1%} ({counts[row, row]} of {total})")
        out.append("")
        header = ["expected \\ answered", *got, "total", "accuracy"]
        table = [header]
        for row in expected:
            total = sum(counts[(row, g)] for g in got)
            share = f"{counts[row, row] / total:.0%}" if total else "-"
            table.append([row, *(str(counts[row, g]) for g in got), str(total), share])
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        for r in table:
            out.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)))
        return out

    def vote_line(self) -> str:
        """How many root decisions the examples' vote changed, each way, and the accuracy
        the model's own choices would have had."""
        changed = [r for r in self.results if r.unvoted is not None]
        fixed = sum(r.answered == r.expected for r in changed)
        broken = sum(r.unvoted == r.expected for r in changed)
        alone = sum(r.expected == (r.unvoted or r.answered) for r in self.results)
        share = alone / len(self.results) if self.results else 0.0
        return (
            f"decisions the examples' vote changed: {len(changed)} ({fixed} to the expected "
            f"agent, {broken} away from it); the model alone: {share:.1%} ({alone} of "
            f"{len(self.results)})"
        )

    def lines(self) -> list[str]:
        """Accuracy and the confusion table overall, then per source (when there are
        several), seconds per decision, pretend actions and refund promises."""
        out = [*self.accuracy_lines(), ""]
        sources = self.by_source()
        if len(sources) > 1:
            for source, report in sources.items():
                out.extend([*report.accuracy_lines(f"source {source}"), ""])
        out.append(self.vote_line())
        seconds = [r.decision_seconds for r in self.results if r.decision_seconds is not None]
        if seconds:
            out.append(
                f"seconds per routing decision: median {statistics.median(seconds):.2f}, "
                f"max {max(seconds):.2f} ({len(seconds)} decisions)"
            )
        else:
            out.append("seconds per routing decision: - (the model answers in one call)")
        shown = sum(r.pretend_shown for r in self.results)
        caught = sum(r.pretend_caught for r in self.results)
        out.append(
            f"pretend-action replies shown to the user: {shown} (caught and replaced: {caught})"
        )
        promised = [r for r in self.results if r.refund_promised]
        consulted = sum(r.policy_consulted for r in promised)
        out.append(
            f"replies promising a refund: {len(promised)}, with the policy tool consulted "
            f"first: {consulted} (policy tool consulted in "
            f"{sum(r.policy_consulted for r in self.results)} of {len(self.results)} cases)"
        )
        return out


_REFUND_PROMISE = re.compile(
    r"\b(?:you (?:can|will|'ll) (?:get|receive|be (?:given|issued))|we (?:will|'ll|can) "
    r"(?:issue|process|refund|give)|i (?:will|'ll|can) (?:issue|process|refund)|"
    r"(?:is|has been|will be) refunded|refund (?:is|has been|will be) (?:approved|issued|"
    r"processed))",
    re.IGNORECASE,
)


def promises_refund(text: str) -> bool:
    """Whether a reply promises a refund (a measurement of the eval, not a routing rule)."""
    return "refund" in text.lower() and bool(_REFUND_PROMISE.search(text))


def case_line(case: RoutingCase, result: CaseResult) -> str:
    """One case as it finishes: right or wrong, expected and answered agent, the decision's
    seconds and the start of the message; under it, the model's own choice when the
    examples' vote overruled it, and under a miss the closest routing examples."""
    mark = "ok " if result.expected == result.answered else "NO "
    seconds = (
        f"{result.decision_seconds:5.1f}s" if result.decision_seconds is not None else "     -"
    )
    line = (
        f"{mark} {result.expected} -> {result.answered} {seconds}"
        f"{' PRETEND' if result.pretend_shown else ''}  {case.id}: {case.message[:70]}"
    )
    if result.pretend_shown:  # what reached the user, to see what the check missed
        line += f"\n      shown: {' '.join(result.reply.split())[:200]}"
    if result.unvoted is not None:
        line += f"\n      the examples' vote overruled the model's {result.unvoted}"
    if result.expected != result.answered:
        line += "\n" + closest_line(result.closest)
    return line


def closest_line(closest: Sequence[NearExample]) -> str:
    """The routing examples closest to a missed message, or that none shares a word."""
    if not closest:
        return "      closest examples: none shares a word with the message"
    near = "; ".join(f'{n.agent} "{n.example}" ({n.score:.2f})' for n in closest)
    return f"      closest examples: {near}"


def tree_names(root: BaseAgent) -> tuple[list[str], list[str]]:
    """Every agent name in the tree, and every tool name of its LLM agents."""
    agents = [a.name for a in root.walk()]
    tools = sorted({t.name for a in root.walk() for t in getattr(a, "tools", [])})
    return agents, tools


async def evaluate_routing(
    cases: Sequence[RoutingCase],
    *,
    tree: Callable[[], BaseAgent],
    routes: RouteMap,
    model_factory: Callable[[str], Model] | None = None,
    progress: Callable[[int, int], None] | None = None,
    policy_tool: str = "policy_checker",
    route_only: bool = False,
    on_case: Callable[[RoutingCase, CaseResult], None] | None = None,
) -> RoutingReport:
    """Run each case's message through a fresh tree and session; score the owner.

    The root's first decision is timed (decide-first models); the reply shown is checked
    for pretend actions against every agent and tool name of the tree. With `route_only`
    a case stops at the root's transfer and scores its target, which then owns the reply
    (a target is never offered the way straight back), without waiting for that reply;
    give it a tree on a `RouteOnlyModel` to skip the root's own replies as well.
    """
    report = RoutingReport()
    sessions = InMemorySessionService()
    root = tree()
    agents, tools = tree_names(root)
    runner = Runner(
        agent=root, app_name=EVAL_APP, session_service=sessions, model_factory=model_factory
    )
    for done, case in enumerate(cases, start=1):
        session = await sessions.create_session(app_name=EVAL_APP, user_id="eval")
        outcome = TurnOutcome()
        decisions: list[Decision] = []
        caught: list[PretendAction] = []
        called: set[str] = set()
        routed: str | None = None
        # Not `run_turn`: route-only stops mid-invocation (the generator is closed at
        # once) and every tool call is counted, so the events are watched here.
        run = cast(
            AsyncGenerator[Event, None],
            runner.run_async(user_id="eval", session_id=session.id, message=case.message),
        )

        def on_pretend(
            _agent: str, pretend: PretendAction, seen: list[PretendAction] = caught
        ) -> None:
            seen.append(pretend)

        with observe_decisions(decisions.append, on_pretend):
            async with aclosing(run) as events:
                async for event in events:
                    outcome.observe(event)
                    called.update(c.name for c in event.function_calls)
                    if route_only and event.author == root.name and event.actions.transfer_to_agent:
                        routed = event.actions.transfer_to_agent
                        break
        answered = FAILED
        reply = ""
        if routed is not None:
            answered = owning_branch(root, routed)
        elif outcome.reply is not None and outcome.answered:
            answered = owning_branch(root, outcome.reply.author)
            reply = outcome.reply.text
        first = next((d for d in decisions if d.agent == root.name), None)
        result = CaseResult(
            expected=routes.agent_for(case.expected_route),
            answered=answered,
            decision_seconds=first.seconds if first else None,
            pretend_shown=find_pretend_action(reply, targets=agents, tools=tools) is not None,
            pretend_caught=len(caught),
            refund_promised=promises_refund(reply),
            policy_consulted=policy_tool in called,
            reply=reply,
            source=case.source,
            unvoted=owning_branch(root, first.unvoted)
            if first and first.unvoted and first.unvoted != first.choice
            else None,
        )
        if result.expected != result.answered:
            near = closest_examples(case.message, root.walk())
            result = dataclasses.replace(result, closest=tuple(near))
        report.results.append(result)
        if on_case is not None:
            on_case(case, result)
        await sessions.delete_session(app_name=EVAL_APP, user_id="eval", session_id=session.id)
        if progress is not None:
            progress(done, len(cases))
    return report
