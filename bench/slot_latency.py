"""Reply latency on the embedded model with window summaries on, against whole mode.

    .venv/bin/python -m bench.slot_latency [--turns 6] [--modes incremental,whole]

One embedded model server for the whole run. For each `SUMMARY_MODE`, one multi-turn
support conversation (order ids, amounts and dates in every message, so windows close
and are summarised as it goes) runs through the runner `bot.wiring.build_runner` ships,
on a fresh SQLite database, compaction on. Each next message is sent as soon as the
previous reply has come back, so it arrives while that turn's after-invocation work
(compaction, a window summary) runs on the one-slot server. Prints, per mode, each
turn's reply latency (message in to final reply out), their median and maximum, and
how many background calls yielded to a turn. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

MESSAGES = (
    "Hi, order A-1001 was charged twice on 3 March, 49.00 USD each time.",
    "The duplicate charge is on the card ending 4242. Can you refund it?",
    "Also my invoice INV-7 shows the wrong address: 12 Elm Street.",
    "When will the refund for A-1001 arrive? I need it before 20 March.",
    "And order B-2040 has not shipped yet, it was due on 5 March.",
    "Thanks. Please email me at jo@example.com when B-2040 ships.",
    "One more: can I change the plan to Pro from 1 April?",
    "That is all, thank you.",
)


async def converse(mode: str, turns: int, models: object) -> dict[str, object]:
    """One conversation in `mode`; its turn latencies and the yield count."""
    from bot.config import Settings
    from bot.wiring import build_runner
    from storage.database import Database

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            database_url=f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}",
            summary_mode=mode,  # type: ignore[arg-type]
            _env_file=None,  # type: ignore[call-arg]
        )
        db = await Database.open(settings.database_url)
        try:
            runner = build_runner(settings, db, models)  # type: ignore[arg-type]
            session = await db.sessions.create_session(app_name=settings.app_name, user_id="U1")
            latencies = []
            for text in (MESSAGES * 2)[:turns]:
                started = time.perf_counter()
                async for _ in runner.run_async(user_id="U1", session_id=session.id, message=text):
                    pass
                latencies.append(time.perf_counter() - started)
                print(f"  {mode}: turn {len(latencies)} {latencies[-1]:.1f}s", file=sys.stderr)
            await runner.drain()
        finally:
            await db.close()
    # None where the models have no slot (a build before `agents.models.slot`).
    return {
        "latencies": latencies,
        "yielded": getattr(getattr(models, "slot", None), "yielded", None),
    }


async def main(turns: int, modes: list[str]) -> None:
    from bot.config import Settings
    from bot.models import open_models

    async with open_models(Settings(_env_file=None), stderr=sys.stderr) as models:  # type: ignore[call-arg]
        for mode in modes:
            result = await converse(mode, turns, models)
            latencies = result["latencies"]
            assert isinstance(latencies, list)
            print(
                f"{mode}: {turns} turns, reply latency median {statistics.median(latencies):.1f}s, "
                f"max {max(latencies):.1f}s, per turn "
                + " ".join(f"{x:.1f}" for x in latencies)
                + f"; background calls yielded {result['yielded']}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--modes", default="incremental,whole")
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.modes.split(",")))
