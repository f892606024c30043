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

`--probe` measures one yield on the server instead (a few minutes where a conversation
takes hours on a loaded machine): a long background answer (a window summary's size) is
started through `YieldingModel`; `--probe-after` seconds later a short customer call
(a decision's size) is made inside a turn; prints the customer call's latency and when
the background answer, asked again after the turn, completed. `--probe --no-yield` makes
the same two calls without the slot: the customer call queues behind the long answer.
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


async def probe(models: object, *, after: float, yielding: bool) -> None:
    """One long background answer, then one short customer call `after` seconds in."""
    from agents.events import Part
    from agents.models.base import Content, GenerateConfig, LlmRequest
    from agents.models.slot import ModelSlot, YieldingModel

    main = models.main  # type: ignore[attr-defined]
    slot = ModelSlot()
    background_model = YieldingModel(main, slot) if yielding else main

    def ask(text: str, tokens: int) -> LlmRequest:
        return LlmRequest(
            model=main.name,
            contents=[Content(role="user", parts=(Part(text=text),))],
            config=GenerateConfig(temperature=0.0, max_tokens=tokens),
        )

    long = ask("Write a detailed summary of a refund dispute for order A-1001, 60 lines.", 200)
    short = ask("Answer with one word: is a refund a billing question?", 4)
    started = time.perf_counter()
    background = asyncio.ensure_future(background_model.generate(long))
    await asyncio.sleep(after)
    asked = time.perf_counter()
    async with slot.turn():
        await main.generate(short)
    reply = time.perf_counter() - asked
    print(f"customer call latency {reply:.1f}s (yield={yielding}, asked {after:.0f}s in)")
    await background
    done = time.perf_counter() - started
    print(f"background answer complete at {done:.1f}s, yielded {slot.yielded}")


async def main(turns: int, modes: list[str], args: argparse.Namespace) -> None:
    from bot.config import Settings
    from bot.wiring import open_models

    async with open_models(Settings(_env_file=None), stderr=sys.stderr) as models:  # type: ignore[call-arg]
        if args.probe:
            await probe(models, after=args.probe_after, yielding=not args.no_yield)
            return
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
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--probe-after", type=float, default=20.0)
    parser.add_argument("--no-yield", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.modes.split(","), args))
