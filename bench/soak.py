"""Soak: 20,000 invocations across 2,000 threads through the real HTTP app, with
compaction after every invocation and a summary every 100 invocations.

Prints RSS and open file descriptors at checkpoints (they must stay flat), and the
in-memory state that must be released once work finishes: the worker's per-thread
queues and tasks, the runner's background hooks, the compactor's per-session locks and
the summariser's temporary sessions (the delivery filter is a bounded cache and is shown
with its cap). The fake Slack's records are cleared between rounds so only the bot's
memory is measured.

    .venv/bin/python bench/soak.py [--threads 2000] [--per-thread 10]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agents.compaction import Compactor, EventsCompactionConfig, LlmEventSummarizer
from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ModelProfile
from agents.summary import SummaryService
from bench.support_trees import current_rss_mb
from tests.e2e.harness import BotHarness, dm, open_database
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import EchoModel, echo_tree

BATCH = 200


class TailModel:
    """An instant summariser for compaction and summaries: the tail of its prompt."""

    name = "tail"
    profile = ModelProfile()

    async def generate(self, request: LlmRequest) -> LlmResponse:
        return LlmResponse.from_text(request.contents[-1].text[-400:])


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def state(bot: BotHarness, compactor: Compactor, summaries: SummaryService) -> dict[str, int]:
    services = bot.services
    worker = services.worker
    return {
        "queues": len(worker._queues),
        "tasks": len(worker._tasks),
        "hooks": len(services.runner._background),
        "compactor_locks": len(compactor._locks),
        "summary_sessions": len(summaries.calls.session_service._sessions),
        "delivery_keys": len(services.deliveries._events) + len(services.deliveries._messages),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2000)
    parser.add_argument("--per-thread", type=int, default=10)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    total = args.threads * args.per_thread
    with tempfile.TemporaryDirectory() as tmp:
        slack = await FakeSlackApi().start()
        db = await open_database(Path(tmp))
        summaries = SummaryService(TailModel())
        bot = await BotHarness.start(
            slack, agent=echo_tree(EchoModel()), db=db, summarizer=summaries
        )
        compactor = Compactor(
            db.sessions, EventsCompactionConfig(summarizer=LlmEventSummarizer(TailModel()))
        )
        bot.services.runner.after_invocation.append(compactor)
        roots = [f"{1_700_000_000 + n}.000001" for n in range(args.threads)]
        done, rows = 0, []
        for k in range(args.per_thread):
            for start in range(0, args.threads, BATCH):
                sends = []
                for n in range(start, min(start + BATCH, args.threads)):
                    ts = roots[n] if k == 0 else f"{1_700_000_000 + n}.{k + 1:06d}"
                    thread = None if k == 0 else roots[n]
                    # One DM each: top-level messages in one DM are one conversation.
                    event = dm(f"t{n} m{k}", ts=ts, thread_ts=thread, channel=f"D{n}", user=f"U{n}")
                    sends.append(bot.send_event(event))
                await asyncio.gather(*sends)
                await bot.idle(120)
                await bot.services.runner.drain()
                done += len(sends)
                if done % 100 < BATCH:
                    record = await db.threads.get_by_session(
                        (await db.threads.list_threads(limit=1))[0].session_id
                    )
                    if record is not None:
                        await summaries.summarize_session(
                            db.sessions,
                            app_name=record.app_name,
                            user_id=record.user_id,
                            session_id=record.session_id,
                        )
            slack.calls.clear()
            slack.attempts.clear()
            slack.messages.clear()
            gc.collect()
            rows.append((done, current_rss_mb(), open_fds(), state(bot, compactor, summaries)))
            print(f"{done:>7,} invocations  RSS {rows[-1][1]:7.1f} MB  fds {rows[-1][2]:4d}  "
                  + "  ".join(f"{k}={v}" for k, v in rows[-1][3].items()), flush=True)  # fmt: skip
        inflight = await db.inflight.count()
        await bot.stop()
        await db.close()
        await slack.stop()
    first, last = rows[min(1, len(rows) - 1)], rows[-1]
    print(
        f"soak: {total:,} invocations over {args.threads:,} threads: RSS "
        f"{first[1]:.1f} -> {last[1]:.1f} MB ({last[1] - first[1]:+.1f}) after the first "
        f"{first[0]:,}; fds {first[2]} -> {last[2]}; unanswered in flight {inflight}; "
        f"delivery filter cap 2 x 20,000 keys"
    )


if __name__ == "__main__":
    asyncio.run(main())
