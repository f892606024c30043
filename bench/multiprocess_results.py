"""What a `bench/multiprocess.py` run measured, and how it is counted from what the
fake Slack Web API recorded: replies lost, duplicated and out of order, digest messages
per thread in the lead channel, CPU per process, and the steady-state rate."""

from __future__ import annotations

import json
import os
import re
import resource
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.slack.render.blocks import FAILURE_TEXT, INTERRUPTED_TEXT, THINKING_TEXT
from storage.database import Database
from tests.fakes.slack_api import FakeSlackApi

LEAD = "CLEAD"
_NUMBER = re.compile(r"message (\d+)")


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


def answers(slack: FakeSlackApi, root: str) -> list[dict[str, Any]]:
    """The bot's finished messages in a thread (`root` is "channel/ts"), oldest first: a
    streamed reply counts once its stream is stopped, a placeholder once updated."""
    dm_channel, ts = root.split("/")
    return [
        m
        for m in slack.thread(dm_channel, ts)
        if m.get("bot_id") and m.get("text") != THINKING_TEXT and not m.get("streaming")
    ]


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
