"""Hostile-client benchmark for HTTP mode: do Slack's signed events still get acked within
Slack's 3 s while outsiders abuse the port?

Starts the bot as `bench/slack_load.py` does (`bench/load_apps.py bot`: the shipped HTTP
front, event loop and settings, a model that sleeps MODEL_DELAY per call, the fake Web
API in this process), then for SECONDS runs, all at once, against its port on loopback:

- junk: JUNK clients posting unsigned bodies to /slack/events as fast as they are
  answered (each gets 401);
- slow: SLOW connections that send half a request (headers, or headers and part of a
  body) and then nothing, each reopened as soon as the bot closes it;
- idle: IDLE connections that send nothing, likewise reopened;

while RATE signed DM events a second arrive, each from its own person. The abusers
connect from 127.0.0.2 and Slack's events from 127.0.0.1, as an attacker and Slack come
from different hosts; `--shared-address` sends them all from 127.0.0.1, as when every
connection comes through one proxy or one host's Slack and attacker share an address.
The abusers run in a process of their own, as an attacker's clients run on
machines of their own: sharing this process's event loop with the signed sender and the
fake Web API, their reconnect loops would delay the sender and the bot's Web API calls, and
the figures would time the bench, not the bot. It prints the
signed events' ack p50/p99 (target p99 < 3000 ms), how many were never acked or never
answered (lost, must be 0), what the abusers got done, and the bot's own count of the
connections it closed (`support_bot_http_connections_closed_total`).

    python bench/abuse.py [--seconds 20] [--rate 5] [--junk 4] [--slow 600] [--idle 600]
                          [--bot-fd-limit 1024] [--shared-address]

`--bot-fd-limit` starts the bot with that many file descriptors (a common default
`ulimit -n`), so that what one client's connections cost shows.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from bench.slack_load import pct, reply_of, start_app, stop
from tests.e2e.harness import SIGNING_SECRET, sign
from tests.fakes.slack_api import FakeSlackApi

SLOW_REQUESTS = (
    b"POST /slack/events HTTP/1.1\r\nHost: bot\r\nContent-Type: application/json\r\n",
    b'POST /slack/events HTTP/1.1\r\nHost: bot\r\nContent-Length: 4000\r\n\r\n{"type":',
)


@dataclass
class Abuse:
    """What the abusers got done (carried from their process as JSON)."""

    junk_answers: Counter[int] = field(default_factory=Counter)
    junk_errors: int = 0
    opened: Counter[str] = field(default_factory=Counter)
    closed_by_bot: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)


async def junk_client(url: str, source: str, until: float, abuse: Abuse) -> None:
    """Unsigned posts from `source`, back to back, on one keep-alive session."""
    body = b'{"type":"event_callback","event":{"type":"message","text":"junk"}}' * 20
    connector = aiohttp.TCPConnector(local_addr=(source, 0))
    async with aiohttp.ClientSession(connector=connector) as http:
        while time.monotonic() < until:
            try:
                async with http.post(url, data=body) as resp:
                    await resp.read()
                    abuse.junk_answers[resp.status] += 1
            except aiohttp.ClientError:
                abuse.junk_errors += 1


async def holder(
    kind: str, port: int, source: str, payload: bytes, until: float, abuse: Abuse
) -> None:
    """One connection from `source` that never completes a request, reopened whenever it
    is closed."""
    while time.monotonic() < until:
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, local_addr=(source, 0)
            )
        except OSError:
            abuse.refused[kind] += 1
            await asyncio.sleep(0.05)
            continue
        abuse.opened[kind] += 1
        try:
            writer.write(payload)
            await writer.drain()
            left = until - time.monotonic()
            if left > 0 and await asyncio.wait_for(reader.read(), left) == b"":
                abuse.closed_by_bot[kind] += 1
        except TimeoutError:
            pass  # held to the end of the run
        except OSError:
            abuse.closed_by_bot[kind] += 1
        finally:
            writer.close()


async def abuse_for(args: argparse.Namespace) -> Abuse:
    """Run the junk, slow and idle clients against `args.url` for `args.seconds`."""
    abuse = Abuse()
    until = time.monotonic() + args.seconds
    port = int(args.url.split(":")[-1].split("/")[0])
    source = "127.0.0.1" if args.shared_address else "127.0.0.2"
    abusers = [
        asyncio.create_task(junk_client(args.url, source, until, abuse)) for _ in range(args.junk)
    ]
    abusers += [
        asyncio.create_task(holder("slow", port, source, SLOW_REQUESTS[n % 2], until, abuse))
        for n in range(args.slow)
    ]
    abusers += [
        asyncio.create_task(holder("idle", port, source, b"", until, abuse))
        for _ in range(args.idle)
    ]
    print("started", flush=True)
    await asyncio.gather(*abusers)
    return abuse


def abuse_main(args: argparse.Namespace) -> None:
    """The abusers' process (`--abuse-only URL`): "started", then what they got done."""
    abuse = asyncio.run(abuse_for(args))
    fields = {
        name: dict(value) for name, value in vars(abuse).items() if isinstance(value, Counter)
    }
    print(json.dumps({**fields, "junk_errors": abuse.junk_errors}), flush=True)


async def start_abusers(args: argparse.Namespace, url: str) -> asyncio.subprocess.Process:
    """The abusers' process, once its clients have started."""
    command = [sys.executable, __file__, "--abuse-only", url, "--seconds", str(args.seconds)]
    command += ["--junk", str(args.junk), "--slow", str(args.slow), "--idle", str(args.idle)]
    command += ["--shared-address"] if args.shared_address else []
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    if (await process.stdout.readline()).strip() != b"started":
        raise RuntimeError("the abusers' process did not start")
    return process


async def abusers_done(process: asyncio.subprocess.Process) -> Abuse:
    """What the abusers' process reports when it ends."""
    out, _ = await process.communicate()
    data = json.loads(out.decode().strip().splitlines()[-1])
    junk_errors = data.pop("junk_errors")
    data["junk_answers"] = {int(status): n for status, n in data["junk_answers"].items()}
    return Abuse(**{name: Counter(value) for name, value in data.items()}, junk_errors=junk_errors)


@contextlib.contextmanager
def fd_limit(limit: int | None) -> Iterator[None]:
    """This process's file-descriptor limit lowered to `limit` (for a child started in
    the block, which inherits it), and raised back after."""
    if limit is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def bot_counters(port: int) -> dict[str, float]:
    """The bot's closed-connection counters, by reason, from its /metrics."""
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/metrics") as resp:
            text = await resp.text()
    found = {}
    for line in text.splitlines():
        if line.startswith("support_bot_http_connections_closed_total{"):
            reason = line.split('reason="', 1)[1].split('"', 1)[0]
            found[reason] = float(line.split()[-1])
    return found


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp())
    async with FakeSlackApi() as slack, contextlib.AsyncExitStack() as cleanup:
        env = {
            "SLACK_BOT_TOKEN": "xoxb-bench",
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": slack.url,
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp / 'bench.db'}",
            "MODEL_DELAY": str(args.model_delay),
            "LOG_LEVEL": "WARNING",
        }
        with fd_limit(args.bot_fd_limit):
            process, url = await start_app("bot", env)
        cleanup.push_async_callback(stop, process)
        port = int(url.split(":")[-1].split("/")[0])
        abusers = await start_abusers(args, url)
        until = time.monotonic() + args.seconds
        await asyncio.sleep(min(2.0, args.seconds / 4))  # the abuse is under way first

        acks: list[float] = []
        unacked = 0
        failures: Counter[str] = Counter()
        sent: list[str] = []
        signed = aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=("127.0.0.1", 0)))
        cleanup.push_async_callback(signed.close)

        async def send(n: int) -> None:
            nonlocal unacked
            event: dict[str, Any] = {
                "type": "message",
                "channel_type": "im",
                "channel": f"D{n}",
                "user": f"U{n}",
                "text": f"m{n}",
                "ts": f"{1_700_000_000 + n}.000100",
            }
            body = json.dumps(
                {
                    "type": "event_callback",
                    "team_id": "T1",
                    "api_app_id": "A1",
                    "event_id": f"Ev{n}",
                    "event_time": int(time.time()),
                    "event": event,
                }
            )
            start = time.perf_counter()
            try:
                async with signed.post(
                    url,
                    data=body,
                    headers={"Content-Type": "application/json", **sign(body)},
                    timeout=aiohttp.ClientTimeout(total=30),
                ) as resp:
                    await resp.read()
                    if resp.status != 200:
                        unacked += 1
                        failures[f"status {resp.status}"] += 1
                        return
            except (aiohttp.ClientError, TimeoutError) as exc:
                unacked += 1
                failures[type(exc).__name__] += 1
                return
            acks.append((time.perf_counter() - start) * 1000)

        senders = []
        n = 0
        t0 = time.monotonic()
        while time.monotonic() < until:
            sent.append(f"m{n}")
            senders.append(asyncio.create_task(send(n)))
            n += 1
            await asyncio.sleep(max(0.0, t0 + n / args.rate - time.monotonic()))
        await asyncio.gather(*senders)
        abuse = await abusers_done(abusers)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            answered = {reply_of(call, slack)[1] for call in slack.calls}
            if all(m in answered for m in sent):
                break
            await asyncio.sleep(0.2)
        answered = {reply_of(call, slack)[1] for call in slack.calls}
        counters = await bot_counters(port)

    lost = sum(1 for m in sent if m not in answered)
    print(
        f"{args.seconds:g}s of abuse: {args.junk} junk clients, {args.slow} slow and "
        f"{args.idle} idle connections (each reopened when closed), from "
        f"{'127.0.0.1, the same address as Slack' if args.shared_address else '127.0.0.2'}, "
        f"Slack from 127.0.0.1; bot fd limit {args.bot_fd_limit or 'inherited'}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"signed events: {len(sent)} sent, {len(acks)} acked; ack ms p50 {pct(acks, 50):.1f}  "
        f"p99 {pct(acks, 99):.1f}  max {max(acks, default=float('nan')):.1f}  "
        "(target p99 < 3000)"
    )
    print(f"signed events never acked: {unacked} {dict(failures)}  never answered (lost): {lost}")
    print(
        f"junk: {sum(abuse.junk_answers.values())} answered {dict(abuse.junk_answers)}, "
        f"{abuse.junk_errors} connection errors"
    )
    for kind in ("slow", "idle"):
        print(
            f"{kind}: {abuse.opened[kind]} connections opened, {abuse.closed_by_bot[kind]} "
            f"closed by the bot, {abuse.refused[kind]} refused"
        )
    print(f"bot closed connections by reason: {counters}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rate", type=float, default=5, help="signed events per second")
    parser.add_argument("--junk", type=int, default=4, help="unsigned clients")
    parser.add_argument("--slow", type=int, default=600, help="half-sent connections")
    parser.add_argument("--idle", type=int, default=600, help="connections that send nothing")
    parser.add_argument("--model-delay", type=float, default=0.5)
    parser.add_argument("--bot-fd-limit", type=int, default=None, help="the bot's ulimit -n")
    parser.add_argument(
        "--shared-address",
        action="store_true",
        help="abusers connect from Slack's address (127.0.0.1), not 127.0.0.2",
    )
    parser.add_argument("--abuse-only", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.abuse_only:
        args.url = args.abuse_only
        abuse_main(args)
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
