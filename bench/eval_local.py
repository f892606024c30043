"""Summary and routing evaluations on the embedded local model (`make eval-local`).

Starts the embedded model (bot.local_model.server), then runs:
- summaries: `bot.evals.summaries.evaluate` over N conversations of transcripts.jsonl
  (every len//N-th), printing entity recall, first-attempt pass rate, fallback rate and
  seconds per summary;
- routing: each selected conversation's first user message goes through the support
  tree's supervisor (`Runner`, in-memory sessions); the owning agent (the last transfer
  target, else the root) is compared with `expected_route` mapped through `--route-map`
  (unmapped routes expect `--default-agent`). Prints accuracy, a confusion table and
  seconds per decision. An invocation stops at its first transfer: the specialist's
  answer is not part of the routing decision and would only add minutes.

    .venv/bin/python bench/eval_local.py [--summaries 20] [--routing 50] [--data PATH]
        [--route-map billing=billing_agent,tech_support=tech_support]
        [--default-agent support_supervisor]

On 2 CPU cores expect tens of minutes for the defaults. Until `support-bot eval
summaries|routing` exist this script is the way to run them on the local model.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agents import InMemorySessionService, Runner
from agents.models.base import Model
from agents.summary import SummaryService
from agents.tree import build_support_tree
from bot.evals.dataset import load_conversations
from bot.evals.summaries import evaluate, select_every_nth
from bot.local_model.server import local_model_server

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts.jsonl"
DEFAULT_ROUTES = "billing=billing_agent,tech_support=tech_support"


def parse_route_map(text: str) -> dict[str, str]:
    """`"billing=billing_agent,tech_support=tech_support"` as a dict."""
    pairs = (item.split("=", 1) for item in text.split(",") if item.strip())
    return {route.strip(): agent.strip() for route, agent in pairs}


def first_user_messages(path: Path) -> list[tuple[str, str, str]]:
    """(conversation id, first user text, expected_route) for every row that has one."""
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            text = next(
                (e["text"] for e in row["events"] if e["author"] == "user" and e.get("text")), None
            )
            if text:
                rows.append((row["id"], text, row["expected_route"]))
    return rows


def show_progress(label: str, done: int, total: int, started: float) -> None:
    per_item = (time.monotonic() - started) / done
    print(
        f"\r{label}: {done}/{total} ({per_item:.1f}s each)",
        end="\n" if done == total else "",
        file=sys.stderr,
        flush=True,
    )


async def route_one(model: Model, message: str, *, max_model_calls: int) -> tuple[str, str | None]:
    """The agent that owns the reply to `message`, and the run's error code if any."""
    sessions = InMemorySessionService()
    tree = build_support_tree(model=model)
    runner = Runner(
        agent=tree,
        app_name="route_eval",
        session_service=sessions,
        max_model_calls=max_model_calls,
    )
    session = await sessions.create_session(app_name="route_eval", user_id="eval")
    owner, error = tree.name, None
    events = runner.run_async(user_id="eval", session_id=session.id, message=message)
    async with contextlib.aclosing(events):
        async for event in events:
            error = event.error_code or error
            if event.actions.transfer_to_agent:
                owner = event.actions.transfer_to_agent
                break
    return owner, error


async def eval_routing(model: Model, args: argparse.Namespace) -> None:
    route_map = parse_route_map(args.route_map)
    rows = select_every_nth(first_user_messages(args.data), args.routing)
    confusion: collections.Counter[tuple[str, str]] = collections.Counter()
    seconds: list[float] = []
    errors: collections.Counter[str] = collections.Counter()
    started = time.monotonic()
    for done, (_, message, route) in enumerate(rows, start=1):
        expected = route_map.get(route, args.default_agent)
        began = time.perf_counter()
        owner, error = await route_one(model, message, max_model_calls=args.max_model_calls)
        seconds.append(time.perf_counter() - began)
        confusion[(expected, owner)] += 1
        if error:
            errors[error] += 1
        show_progress("routing", done, len(rows), started)
    correct = sum(n for (expected, owner), n in confusion.items() if expected == owner)
    print(f"[routing] conversations: {len(rows)}")
    print(f"  accuracy: {correct / len(rows):.1%} ({correct}/{len(rows)})")
    print(f"  seconds per decision: median {statistics.median(seconds):.1f}, "
          f"mean {statistics.fmean(seconds):.1f}")  # fmt: skip
    if errors:
        print(f"  invocations that ended in an error: {dict(errors)}")
    print_confusion(confusion)


def print_confusion(confusion: collections.Counter[tuple[str, str]]) -> None:
    """Rows: expected agent; columns: the agent that owned the reply."""
    expected = sorted({e for e, _ in confusion})
    owners = sorted({o for _, o in confusion})
    width = max(len(name) for name in [*expected, *owners, "expected \\ got"]) + 2
    print("  " + "expected \\ got".ljust(width) + "".join(o.rjust(width) for o in owners))
    for row in expected:
        cells = "".join(str(confusion[(row, o)]).rjust(width) for o in owners)
        print("  " + row.ljust(width) + cells)


async def eval_summaries(model: Model, args: argparse.Namespace) -> None:
    conversations = select_every_nth(list(load_conversations(args.data)), args.summaries)
    service = SummaryService(model)
    started = time.monotonic()
    report = await evaluate(
        conversations,
        service,
        label="local",
        progress=lambda done, total: show_progress("summaries", done, total, started),
    )
    for line in report.lines():
        print(line)


async def main(args: argparse.Namespace) -> None:
    async with local_model_server() as endpoint:
        model = endpoint.litellm_model()
        print(f"model: {endpoint.model} at {endpoint.api_base} (prompted tool calls)")
        if args.routing > 0:
            await eval_routing(model, args)
        if args.summaries > 0:
            await eval_summaries(model, args)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--summaries", type=int, default=20, help="0 skips the summaries")
    parser.add_argument("--routing", type=int, default=50, help="0 skips routing")
    parser.add_argument("--route-map", default=DEFAULT_ROUTES, help="route=agent,...")
    parser.add_argument("--default-agent", default="support_supervisor")
    parser.add_argument("--max-model-calls", type=int, default=4)
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
