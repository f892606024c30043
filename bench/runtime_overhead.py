"""Runtime overhead per turn over the support tree, with an instant model, in memory.

Each turn is one AgentTool call plus one transfer (4 model calls, 6 events). Sessions
are 20 turns long, like a real support thread, and are deleted when done. Prints the
median µs per turn over 2,000 turns and RSS while running 10,000 turns (it must stay
flat). With google-adk installed (`pip install -e '.[bench]'`), runs the same tree on
ADK's in-memory runner in the same process, alternating, and prints ours/ADK.
`bench/vs_adk.py` adds SQLite persistence, peak RSS and prompt tokens.

    .venv/bin/python bench/runtime_overhead.py [--turns 2000] [--soak 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.support_trees import adk_available, current_rss_mb
from bench.vs_adk import TURNS_PER_SESSION, make, timed_turns


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--soak", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds per runtime")
    parser.add_argument(
        "--ours-only", action="store_true", help="measure this runtime alone, with no ADK ratio"
    )
    args = parser.parse_args()
    if not args.ours_only and not adk_available():
        sys.exit("google-adk is not installed: pip install -e '.[bench]' (or pass --ours-only)")
    logging.disable(logging.CRITICAL)
    directory = Path(tempfile.mkdtemp(prefix="bench-runtime"))

    names = ["ours"] if args.ours_only else ["ours", "adk"]
    runtimes = [make(name, "memory", directory) for name in names]
    for runtime in runtimes:
        await runtime.open()
        await timed_turns(runtime, TURNS_PER_SESSION, 0)  # warm-up, one whole session
    per_round = max(args.turns // args.rounds // TURNS_PER_SESSION, 1) * TURNS_PER_SESSION
    samples: dict[str, list[float]] = {name: [] for name in names}
    for k in range(args.rounds):
        for runtime in runtimes if k % 2 == 0 else runtimes[::-1]:
            gc.collect()
            samples[runtime.name] += await timed_turns(runtime, per_round, TURNS_PER_SESSION)
    medians = {name: statistics.median(s) for name, s in samples.items()}
    for name, median in medians.items():
        print(f"{name}: median {median:,.0f} µs per turn over {len(samples[name]):,} turns")
    if "adk" in medians:
        print(
            f"ratio ours/ADK (µs per turn): {medians['ours'] / medians['adk']:.3f} (target <= 0.3)"
        )

    ours = make("ours", "memory", directory)
    await ours.open()
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
