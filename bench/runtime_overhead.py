"""Runtime overhead per turn over the support tree, with an instant model, in memory.

Each turn is one AgentTool call plus one transfer (4 model calls, 6 events). Sessions
are 20 turns long, like a real support thread, and are deleted when done. Prints the
median µs per turn over 2,000 turns, and RSS while running 10,000 turns (it must stay
flat). With google-adk installed (`pip install -e '.[bench]'`), runs the same tree on
ADK's InMemoryRunner in the same process, alternating, and prints ours/ADK.

    .venv/bin/python bench/runtime_overhead.py [--turns 2000] [--soak 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import InMemorySessionService, Runner
from bench.support_trees import (
    TURN_TEXT,
    adk_available,
    build_adk,
    build_ours,
    current_rss_mb,
)

TURNS_PER_SESSION = 20


class Ours:
    name = "ours"

    def __init__(self) -> None:
        self.service = InMemorySessionService()
        self.runner = Runner(agent=build_ours(), app_name="bench", session_service=self.service)
        self.session_id = ""

    async def new_session(self) -> None:
        if self.session_id:
            await self.service.delete_session(
                app_name="bench", user_id="u", session_id=self.session_id
            )
        session = await self.service.create_session(app_name="bench", user_id="u")
        self.session_id = session.id

    async def turn(self, n: int) -> int:
        events = 0
        async for _ in self.runner.run_async(
            user_id="u", session_id=self.session_id, message=TURN_TEXT.format(n=n)
        ):
            events += 1
        return events


class Adk:
    name = "adk"

    def __init__(self) -> None:
        from google.adk.runners import InMemoryRunner
        from google.genai import types

        self.types = types
        self.runner = InMemoryRunner(agent=build_adk(), app_name="bench")
        self.session_id = ""

    async def new_session(self) -> None:
        service = self.runner.session_service
        if self.session_id:
            await service.delete_session(app_name="bench", user_id="u", session_id=self.session_id)
        session = await service.create_session(app_name="bench", user_id="u")
        self.session_id = session.id

    async def turn(self, n: int) -> int:
        message = self.types.Content(
            role="user", parts=[self.types.Part(text=TURN_TEXT.format(n=n))]
        )
        events = 0
        async for _ in self.runner.run_async(
            user_id="u", session_id=self.session_id, new_message=message
        ):
            events += 1
        return events


async def timed_turns(runtime: Ours | Adk, turns: int) -> list[float]:
    samples: list[float] = []
    for n in range(turns):
        if n % TURNS_PER_SESSION == 0:
            await runtime.new_session()
        start = time.perf_counter()
        await runtime.turn(n)
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--soak", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per runtime")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)

    runtimes: list[Ours | Adk] = [Ours()]
    if adk_available():
        runtimes.append(Adk())
    else:
        print("google-adk not installed: measuring ours only (pip install -e '.[bench]')")
    for runtime in runtimes:  # warm-up, and a check that a turn is what we claim
        await runtime.new_session()
        print(f"{runtime.name}: events per turn = {await runtime.turn(0)} (user event excluded)")

    per_round = max(args.turns // args.rounds, TURNS_PER_SESSION)
    samples: dict[str, list[float]] = {r.name: [] for r in runtimes}
    for _ in range(args.rounds):
        for runtime in runtimes:
            gc.collect()
            samples[runtime.name] += await timed_turns(runtime, per_round)
    medians = {name: statistics.median(s) for name, s in samples.items()}
    for name, median in medians.items():
        print(f"{name}: median {median:,.0f} µs per turn over {len(samples[name])} turns")
    if "adk" in medians:
        print(
            f"ratio ours/ADK (µs per turn): {medians['ours'] / medians['adk']:.3f} (target <= 0.3)"
        )

    ours = Ours()
    checkpoints = {args.soak // 10, args.soak // 2, args.soak}
    rss: list[tuple[int, float]] = []
    for n in range(1, args.soak + 1):
        if (n - 1) % TURNS_PER_SESSION == 0:
            await ours.new_session()
        await ours.turn(n)
        if n in checkpoints:
            gc.collect()
            rss.append((n, current_rss_mb()))
    print("ours: RSS while soaking: " + ", ".join(f"{n:,} turns {mb:.1f} MB" for n, mb in rss))
    growth = rss[-1][1] - rss[0][1]
    print(f"ours: RSS growth from {rss[0][0]:,} to {rss[-1][0]:,} turns: {growth:+.1f} MB")


if __name__ == "__main__":
    asyncio.run(main())
