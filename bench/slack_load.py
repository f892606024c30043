"""Load benchmark for the Slack app in HTTP mode.

Starts the bot against the fake Web API, with a model that sleeps 2 s per call, and a
bare Bolt app that only acks, side by side, each in its own process as in production
(`bench/load_apps.py`); the load generator and the fake Web API share this one. Sends
RATE signed events per second for SECONDS across THREADS threads to both, then prints
ack p50/p99 (target p99 < 50 ms), time to reply p50/p99, replies lost or duplicated
(must be 0) and the ack p99 ratio.

    python bench/slack_load.py [--seconds 30] [--rate 200] [--threads 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from tests.e2e.harness import SIGNING_SECRET, sign
from tests.fakes.slack_api import FakeSlackApi


async def start_app(which: str, env: dict[str, str]) -> tuple[asyncio.subprocess.Process, str]:
    """Run `bench/load_apps.py <which>` as its own process; wait until it is healthy."""
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
    process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), timeout=30)
    except TimeoutError:
        process.kill()


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


async def main(seconds: float, rate: int, threads: int, delay: float, concurrency: int) -> None:
    tmp = Path(tempfile.mkdtemp())
    async with FakeSlackApi() as slack:
        env = {
            "SLACK_BOT_TOKEN": "xoxb-bench",
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": slack.url,
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp / 'bench.db'}",
            "MAX_CONCURRENT_INVOCATIONS": str(concurrency),
            "MODEL_DELAY": str(delay),
            "LOG_LEVEL": "WARNING",
        }
        bot_process, bot_url = await start_app("bot", env)
        bare_process, bare_url = await start_app("bare", env)
        acks: dict[str, list[float]] = {"bot": [], "bare": []}
        sent_at: dict[str, float] = {}
        roots: dict[int, str] = {}
        http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

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
            async with http.post(url, data=body, headers=headers) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            acks[which].append((time.perf_counter() - start) * 1000)

        tasks: set[asyncio.Task[None]] = set()
        total = int(seconds * rate)
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
                "user": "U1",
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
        while len(slack.calls_to("chat.update")) < total and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.2)
        await asyncio.sleep(1)
        replies: Counter[str] = Counter()
        reply_ms: list[float] = []
        for call in slack.calls:
            if call.method == "chat.update" and call.args.get("text", "").startswith("support"):
                msg_id = call.args["text"].split("reply to ")[-1].split()[0]
                replies[msg_id] += 1
                reply_ms.append((call.at - sent_at[msg_id]) * 1000)
        lost = sum(1 for m in sent_at if replies[m] == 0)
        dup = sum(c - 1 for c in replies.values() if c > 1)
        await http.close()
        await stop(bot_process)
        await stop(bare_process)
    print(
        f"events: {total} over {seconds:g}s at {rate}/s across {threads} threads "
        f"(model sleeps {delay:g}s per call)"
    )
    print(
        f"ack latency ms: p50 {pct(acks['bot'], 50):.2f}  p99 {pct(acks['bot'], 99):.2f}"
        f"  (target p99 < 50)"
    )
    print(f"bare Bolt ack ms: p50 {pct(acks['bare'], 50):.2f}  p99 {pct(acks['bare'], 99):.2f}")
    print(f"ack p99 ratio bot/bare: {pct(acks['bot'], 99) / pct(acks['bare'], 99):.2f}")
    if reply_ms:
        print(f"time to reply ms: p50 {pct(reply_ms, 50):.0f}  p99 {pct(reply_ms, 99):.0f}")
    print(f"replies lost: {lost}  duplicated: {dup}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--threads", type=int, default=500)
    parser.add_argument("--model-delay", type=float, default=2.0)
    parser.add_argument(
        "--concurrency", type=int, default=400, help="MAX_CONCURRENT_INVOCATIONS of the bot"
    )
    args = parser.parse_args()
    asyncio.run(main(args.seconds, args.rate, args.threads, args.model_delay, args.concurrency))
