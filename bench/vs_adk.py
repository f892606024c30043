"""Our runtime against Google ADK on the same support tree, in one process, alternating.

The tree (bench/support_trees.py): a supervisor that consults policy_checker through an
AgentTool, then transfers to billing_agent, which answers (a sequential tech pipeline
is on the tree but not on this path); every model is an instant rule-based stand-in,
so what is measured is the runtime. Sessions are 20 turns long, like a support thread.

Prints, for in-memory sessions and for SQLite persistence (ours: storage.Database;
ADK: DatabaseSessionService on sqlite+aiosqlite):
- median µs per turn over `--turns` turns, runs alternating between the runtimes;
- peak RSS (VmHWM) of a child process that runs only that runtime for the same turns
  (absolute, and growth over the child's RSS after imports and one warm-up session);
- prompt tokens per turn at turn 60 of one session with compaction on (interval 3,
  overlap 1; both summarisers return the last 800 characters of their window, the same
  bounded summary), counted the same way for both: characters of the system
  instruction and every content part (text, call args, results) sent to the model, / 4.

    .venv/bin/python bench/vs_adk.py [--turns 2000] [--rounds 4] [--skip-rss]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agents import InMemorySessionService, Runner
from agents.compaction import Compactor, EventsCompactionConfig, LlmEventSummarizer
from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ModelProfile
from bench import support_trees
from bench.support_trees import TURN_TEXT, build_adk, build_ours, current_rss_mb

TURNS_PER_SESSION = 20
TOKEN_TURN = 60
SUMMARY_CHARS = 800


class Meter:
    """Prompt size per turn: characters sent to every model call of the turn, / 4."""

    def __init__(self) -> None:
        self.current = 0
        self.per_turn: list[int] = []

    def add(self, chars: int) -> None:
        self.current += chars

    def end_turn(self) -> None:
        self.per_turn.append(self.current // 4)
        self.current = 0


METER = Meter()


def _ours_chars(request: LlmRequest) -> int:
    chars = len(request.system_instruction)
    for content in request.contents:
        for part in content.parts:
            if part.text:
                chars += len(part.text)
            if part.function_call:
                chars += len(part.function_call.name) + len(json.dumps(part.function_call.args))
            if part.function_response:
                response = json.dumps(part.function_response.response, default=str)
                chars += len(part.function_response.name) + len(response)
    return chars


def _adk_chars(llm_request: Any) -> int:
    config = getattr(llm_request, "config", None)
    system = getattr(config, "system_instruction", None) or ""
    chars = len(system) if isinstance(system, str) else len(str(system))
    for content in llm_request.contents or []:
        for part in content.parts or []:
            if part.text:
                chars += len(part.text)
            if part.function_call:
                call = part.function_call
                chars += len(call.name or "") + len(json.dumps(call.args or {}, default=str))
            if part.function_response:
                resp = part.function_response
                chars += len(resp.name or "") + len(json.dumps(resp.response or {}, default=str))
    return chars


def meter_ours() -> None:
    original = support_trees.RuleModel.generate

    async def generate(self: Any, request: LlmRequest) -> LlmResponse:
        METER.add(_ours_chars(request))
        return await original(self, request)

    support_trees.RuleModel.generate = generate  # type: ignore[method-assign]


def meter_adk(root: Any) -> None:
    cls = type(root.model)
    if getattr(cls, "_metered", False):
        return
    original = cls.generate_content_async

    async def generate_content_async(self: Any, llm_request: Any, stream: bool = False) -> Any:
        METER.add(_adk_chars(llm_request))
        async for response in original(self, llm_request, stream):
            yield response

    cls.generate_content_async = generate_content_async
    cls._metered = True


class SummaryModel:
    """Our compaction summariser stand-in: the last 800 characters of its window."""

    name = "summary"
    profile = ModelProfile()

    async def generate(self, request: LlmRequest) -> LlmResponse:
        return LlmResponse.from_text(request.contents[-1].text[-SUMMARY_CHARS:])


def adk_summary_model() -> Any:
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse as AdkResponse
    from google.genai import types

    class AdkSummaryModel(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            prompt = "".join(p.text or "" for c in llm_request.contents for p in c.parts or [])
            part = types.Part(text=prompt[-SUMMARY_CHARS:])
            yield AdkResponse(content=types.Content(role="model", parts=[part]))

    return AdkSummaryModel(model="summary")


class Ours:
    name = "ours"

    def __init__(self, store: str, directory: Path, *, compaction: bool = False) -> None:
        self.store, self.directory, self.compaction = store, directory, compaction
        self.session_id = ""
        self.db: Any = None

    async def open(self) -> None:
        if self.store == "sqlite":
            from storage.database import Database

            self.db = await Database.open(f"sqlite+aiosqlite:///{self.directory / 'ours.db'}")
            self.service: Any = self.db.sessions
        else:
            self.service = InMemorySessionService()
        hooks = []
        if self.compaction:
            config = EventsCompactionConfig(
                summarizer=LlmEventSummarizer(SummaryModel()), compaction_interval=3, overlap_size=1
            )
            hooks.append(Compactor(self.service, config))
        self.runner = Runner(
            agent=build_ours(), app_name="bench", session_service=self.service,
            after_invocation=hooks,
        )  # fmt: skip

    async def close(self) -> None:
        if self.db is not None:
            await self.db.close()

    async def new_session(self) -> None:
        if self.session_id:
            await self.service.delete_session(
                app_name="bench", user_id="u", session_id=self.session_id
            )
        self.session_id = (await self.service.create_session(app_name="bench", user_id="u")).id

    async def turn(self, n: int) -> None:
        async for _ in self.runner.run_async(
            user_id="u", session_id=self.session_id, message=TURN_TEXT.format(n=n)
        ):
            pass
        if self.compaction:
            await self.runner.drain()  # ADK compacts inside run_async; count it the same


class Adk:
    name = "adk"

    def __init__(self, store: str, directory: Path, *, compaction: bool = False) -> None:
        self.store, self.directory, self.compaction = store, directory, compaction
        self.session_id = ""

    async def open(self) -> None:
        from google.adk.apps import App
        from google.adk.apps.app import EventsCompactionConfig as AdkCompaction
        from google.adk.apps.llm_event_summarizer import LlmEventSummarizer as AdkSummarizer
        from google.adk.runners import Runner as AdkRunner
        from google.adk.sessions import DatabaseSessionService
        from google.adk.sessions import InMemorySessionService as AdkMemory
        from google.genai import types

        self.types = types
        root = build_adk()
        meter_adk(root)
        compaction = None
        if self.compaction:
            compaction = AdkCompaction(
                summarizer=AdkSummarizer(llm=adk_summary_model()),
                compaction_interval=3,
                overlap_size=1,
            )
        app = App(name="bench", root_agent=root, events_compaction_config=compaction)
        if self.store == "sqlite":
            url = f"sqlite+aiosqlite:///{self.directory / 'adk.db'}"
            self.service: Any = DatabaseSessionService(db_url=url)
        else:
            self.service = AdkMemory()
        self.runner = AdkRunner(app=app, session_service=self.service)

    async def close(self) -> None:
        close = getattr(self.service, "close", None)
        if close is not None:
            await close()

    async def new_session(self) -> None:
        if self.session_id:
            await self.service.delete_session(
                app_name="bench", user_id="u", session_id=self.session_id
            )
        session = await self.service.create_session(app_name="bench", user_id="u")
        self.session_id = session.id

    async def turn(self, n: int) -> None:
        message = self.types.Content(
            role="user", parts=[self.types.Part(text=TURN_TEXT.format(n=n))]
        )
        async for _ in self.runner.run_async(
            user_id="u", session_id=self.session_id, new_message=message
        ):
            pass


Runtime = Ours | Adk


def make(name: str, store: str, directory: Path, compaction: bool = False) -> Runtime:
    cls = Ours if name == "ours" else Adk
    return cls(store, directory, compaction=compaction)


async def timed_turns(runtime: Runtime, turns: int, start: int) -> list[float]:
    samples = []
    for n in range(start, start + turns):
        if n % TURNS_PER_SESSION == 0:
            await runtime.new_session()
        begin = time.perf_counter()
        await runtime.turn(n)
        samples.append((time.perf_counter() - begin) * 1e6)
    return samples


async def time_store(store: str, turns: int, rounds: int, directory: Path) -> dict[str, float]:
    runtimes = [make("ours", store, directory), make("adk", store, directory)]
    for runtime in runtimes:
        await runtime.open()
        await timed_turns(runtime, TURNS_PER_SESSION, 0)  # warm-up, one whole session
    per_round = max(turns // rounds // TURNS_PER_SESSION, 1) * TURNS_PER_SESSION
    samples: dict[str, list[float]] = {r.name: [] for r in runtimes}
    for k in range(rounds):
        for runtime in runtimes if k % 2 == 0 else runtimes[::-1]:
            gc.collect()
            samples[runtime.name] += await timed_turns(runtime, per_round, TURNS_PER_SESSION)
    for runtime in runtimes:
        await runtime.close()
    return {name: statistics.median(s) for name, s in samples.items()}


async def tokens(name: str, directory: Path) -> dict[int, int]:
    runtime = make(name, "memory", directory, compaction=True)
    await runtime.open()
    await runtime.new_session()
    METER.per_turn.clear()
    for n in range(1, TOKEN_TURN + 1):
        METER.current = 0
        await runtime.turn(n)
        METER.end_turn()
    await runtime.close()
    return {12: METER.per_turn[11], TOKEN_TURN: METER.per_turn[TOKEN_TURN - 1]}


async def rss_child(name: str, store: str, turns: int) -> None:
    """Run one runtime alone and print its RSS after warm-up and its peak, as JSON."""
    logging.disable(logging.CRITICAL)
    with tempfile.TemporaryDirectory() as tmp:
        runtime = make(name, store, Path(tmp))
        await runtime.open()
        await timed_turns(runtime, TURNS_PER_SESSION, 0)
        gc.collect()
        base = current_rss_mb()
        await timed_turns(runtime, turns, TURNS_PER_SESSION)
        peak = peak_rss_mb()
        await runtime.close()
    print(json.dumps({"base": base, "peak": peak}))


def measure_rss(name: str, store: str, turns: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--rss-child", f"{name}:{store}", "--turns", str(turns)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def peak_rss_mb() -> float:
    """This process's high-water RSS (VmHWM; unlike ru_maxrss it is not inherited from
    the parent across exec)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def ratio(ours: float, adk: float) -> str:
    return f"{ours / adk:.3f}" if adk else "n/a"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds per store")
    parser.add_argument("--skip-rss", action="store_true")
    parser.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        name, store = args.rss_child.split(":")
        if name == "ours":
            meter_ours()
        await rss_child(name, store, args.turns)
        return
    if not support_trees.adk_available():
        sys.exit("google-adk is not installed: pip install -e '.[bench]'")
    logging.disable(logging.CRITICAL)
    meter_ours()
    print(f"support tree, instant models, {args.turns} turns per runtime and store")
    with tempfile.TemporaryDirectory() as tmp:
        for store in ("memory", "sqlite"):
            medians = await time_store(store, args.turns, args.rounds, Path(tmp))
            print(
                f"{store:>6}: µs per turn (median)  ours {medians['ours']:>9,.0f}  "
                f"ADK {medians['adk']:>9,.0f}  ours/ADK {ratio(medians['ours'], medians['adk'])}"
                "  (target <= 0.3)"
            )
        if not args.skip_rss:
            for store in ("memory", "sqlite"):
                ours, adk = (measure_rss(n, store, args.turns) for n in ("ours", "adk"))
                growth = (ours["peak"] - ours["base"], adk["peak"] - adk["base"])
                print(
                    f"{store:>6}: peak RSS MB  ours {ours['peak']:7.1f}  ADK {adk['peak']:7.1f}  "
                    f"ours/ADK {ratio(ours['peak'], adk['peak'])};  growth after warm-up  "
                    f"ours {growth[0]:+.1f}  ADK {growth[1]:+.1f}"
                )
        ours_tokens = await tokens("ours", Path(tmp))
        adk_tokens = await tokens("adk", Path(tmp))
    print(
        f"prompt tokens per turn, compaction on: turn 12  ours {ours_tokens[12]:,}  "
        f"ADK {adk_tokens[12]:,};  turn {TOKEN_TURN}  ours {ours_tokens[TOKEN_TURN]:,}  "
        f"ADK {adk_tokens[TOKEN_TURN]:,}  ours/ADK "
        f"{ratio(ours_tokens[TOKEN_TURN], adk_tokens[TOKEN_TURN])}  (target < 1)"
    )
    print(
        f"prompt growth turn 12 -> {TOKEN_TURN}:  ours "
        f"{ours_tokens[TOKEN_TURN] / ours_tokens[12]:.2f}x  "
        f"ADK {adk_tokens[TOKEN_TURN] / adk_tokens[12]:.2f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
