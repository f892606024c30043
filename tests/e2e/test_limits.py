"""End to end: named limits (issue 17 item 4) — a user's rate, a thread's queue cap,
and one shared slot count for replies, commands and digests, replies first."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import sqlalchemy as sa

from agents.metrics import REGISTRY
from agents.models.base import LlmRequest
from agents.models.scripted import ScriptedModel
from bot.slack.render.blocks import BUSY_TEXT
from bot.threads.admission import Priority
from storage.schema import inflight
from tests.e2e.conftest import StartBot
from tests.e2e.harness import dm
from tests.e2e.replies import answer_of
from tests.e2e.test_commands import LINK, RECORD, ROOT, _thread_with_history
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi


async def inflight_rows(db: Any) -> int:
    """Messages still in flight (every refused one must be let go)."""
    async with db.engine.connect() as conn:
        return int((await conn.execute(sa.select(sa.func.count()).select_from(inflight))).scalar())


def _busy_notices(slack: FakeSlackApi) -> list[dict]:
    return [c for c in slack.calls_to("chat.postMessage") if c.get("text") == BUSY_TEXT]


async def test_limits_user_over_rate_is_told_busy_and_model_not_called(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel(["one", "two"])
    bot = await start_bot(support_tree(model), user_rate_burst=2, user_rate_per_minute=1)
    for n in range(3):
        await bot.send_event(dm(f"question {n}", ts=f"1700000100.00010{n}"))
    await bot.idle()
    [notice] = _busy_notices(slack)
    # The third DM is refused before it is accepted, so it joins no conversation: the
    # notice sits under it, shown in the DM too.
    assert notice["thread_ts"] == "1700000100.000102"
    assert notice["reply_broadcast"] is True
    assert len(model.requests) == 2
    # Another user is not held back by the first one's rate.
    model.add("three")
    await bot.send_event(dm("hello", ts="1700000100.000200", user="U2", channel="D2"))
    await bot.idle()
    assert len(model.requests) == 3
    assert await inflight_rows(bot.services.db) == 0


async def test_limits_thread_queue_cap_answers_busy_beyond_it(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel(["first"])
    bot = await start_bot(support_tree(model), max_thread_queue=2)
    root = "1700000300.000100"
    await bot.send_event(dm("start", ts=root))
    await bot.idle()
    gate = asyncio.Event()
    original = model.generate

    async def gated(request: LlmRequest) -> Any:
        await gate.wait()
        return await original(request)

    original_stream = model.generate_stream

    async def gated_stream(request: LlmRequest) -> AsyncIterator[Any]:
        await gate.wait()
        async for response in original_stream(request):
            yield response

    model.generate = gated  # type: ignore[method-assign]
    model.generate_stream = gated_stream  # type: ignore[method-assign]  # replies stream
    model.add("a", "b")
    for n in range(4):
        await bot.send_event(dm(f"more {n}", ts=f"1700000300.00020{n}", thread_ts=root))
    await asyncio.sleep(0.2)
    gate.set()
    await bot.idle()
    # Two waited in the thread's queue; the two beyond the cap were told to retry.
    assert len(_busy_notices(slack)) == 2
    assert len(model.requests) == 3
    assert await inflight_rows(bot.services.db) == 0


async def test_limits_commands_share_the_slot_count_with_replies(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])), max_concurrent_invocations=2)
    worker = bot.services.worker
    running = 0
    peak = 0
    done = asyncio.Event()

    async def command() -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await done.wait()
        running -= 1

    for _ in range(10):
        worker.run(command(), Priority.COMMAND)
    await asyncio.sleep(0.1)
    assert peak == 2
    done.set()
    await bot.idle()


async def test_limits_waiting_replies_go_before_waiting_digests() -> None:
    from bot.threads.admission import PriorityLimit

    limit = PriorityLimit(1)
    order: list[str] = []
    hold = asyncio.Event()

    async def work(name: str, priority: Priority, wait: asyncio.Event | None = None) -> None:
        async with limit.slot(priority):
            if wait is not None:
                await wait.wait()
            order.append(name)

    first = asyncio.create_task(work("holder", Priority.REPLY, hold))
    await asyncio.sleep(0)
    tasks = [asyncio.create_task(work("digest", Priority.DIGEST))]
    await asyncio.sleep(0)
    tasks.append(asyncio.create_task(work("reply", Priority.REPLY)))
    await asyncio.sleep(0)
    hold.set()
    await asyncio.gather(first, *tasks)
    assert order == ["holder", "reply", "digest"]


async def test_limits_acks_go_first_while_the_event_loop_is_behind(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    """A CPU-bound neighbour keeps the loop late: messages are acked (and durable) while
    their invocations wait at the loop-lag gate, and all are answered once it catches up."""
    count = 8
    model = ScriptedModel([f"answer {n}" for n in range(count)])
    bot = await start_bot(support_tree(model), hold_starts_over_loop_lag_ms=20)
    gate = bot.services.worker.gate
    assert gate is not None
    held_before = REGISTRY.get("support_bot_held_starts_total")
    stop = asyncio.Event()

    async def neighbour() -> None:
        while not stop.is_set():
            time.sleep(0.03)  # noqa: ASYNC251 - a neighbour that blocks the loop
            await asyncio.sleep(0)

    await gate.admit()
    hog = asyncio.create_task(neighbour())
    try:
        while not gate.held:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        roots = [f"1700000500.{n:06d}" for n in range(count)]
        # One DM per customer: top-level messages of one DM would be one ordered conversation.
        responses = await asyncio.gather(
            *(
                bot.send_event(dm("help", ts=ts, user=f"U{n}", channel=f"D{n}"))
                for n, ts in enumerate(roots)
            )
        )
        assert [r.status for r in responses] == [200] * count
        # The acks did not wait for the gate: all came back while some of the messages
        # they acknowledged were still held back from starting.
        started_when_acked = len(model.requests)
        assert started_when_acked < count
        # Every message is durable before its ack; their starts waited at the gate.
        assert await inflight_rows(bot.services.db) + started_when_acked >= count
        assert REGISTRY.get("support_bot_held_starts_total") > held_before
    finally:
        stop.set()
        await hog
    await bot.idle()
    assert len(model.requests) == count
    for n, ts in enumerate(roots):
        texts = [answer_of(m) for m in slack.thread(f"D{n}", ts) if m.get("bot_id")]
        assert sum(t.startswith("answer ") for t in texts) == 1, texts
    assert await inflight_rows(bot.services.db) == 0


async def test_limits_handoff_shortcut_and_submission_over_rate_are_told_busy(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(
        support_tree(ScriptedModel([])), user_rate_burst=1, user_rate_per_minute=1
    )
    ts = "1700000600.000100"
    for _ in range(2):
        payload = bot.message_shortcut("handoff_thread", channel="C1", ts=ts, thread_ts=ts)
        assert (await bot.send_payload(payload)).status == 200
    await bot.idle()
    # The first opened its modal; the second was answered, not dropped.
    assert len(slack.calls_to("views.open")) == 1
    [busy] = slack.calls_to("response_url")
    assert busy["text"] == BUSY_TEXT and busy["response_type"] == "ephemeral"
    # A submission over the rate hands nothing off and says so.
    meta = json.dumps({"team": "T1", "channel": "C1", "thread_ts": ts})
    submission = bot.handoff_submission(user="U1", private_metadata=meta, person="U2")
    assert (await bot.send_payload(submission)).status == 200
    await bot.idle()
    [told] = slack.calls_to("chat.postEphemeral")
    assert (told["user"], told["text"]) == ("U1", BUSY_TEXT)
    assert slack.calls_to("chat.postMessage") == []


async def test_limits_compactions_wait_for_the_shared_slot_count(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    users = 5
    model = ScriptedModel([f"answer {n}" for n in range(users)])
    compaction = ScriptedModel(["The user asked for help."] * users)
    running = peak = 0
    release = asyncio.Event()
    summarise = compaction.generate

    async def counted(request: LlmRequest) -> Any:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        try:
            await release.wait()
            return await summarise(request)
        finally:
            running -= 1

    compaction.generate = counted  # type: ignore[method-assign]
    bot = await start_bot(
        support_tree(model),
        compaction_model=compaction,
        compaction_interval=1,
        compaction_overlap=0,
        max_concurrent_invocations=2,
    )
    for n in range(users):
        await bot.send_event(dm("help", ts=f"1700000700.00010{n}", user=f"U{n}", channel=f"D{n}"))
    await bot.idle()
    # Every reply went out; the compactions they scheduled wait for the two slots.
    assert len(model.requests) == users
    await asyncio.sleep(0.3)
    assert (running, peak) == (2, 2)
    release.set()
    await bot.services.runner.drain()
    assert (len(compaction.requests), peak) == (users, 2)


async def test_limits_a_hook_with_nothing_due_takes_no_slot() -> None:
    from bot.threads.admission import LimitedHook, Priority, PriorityLimit

    limit = PriorityLimit(1)
    ran: list[str] = []

    async def hook(session: Any, invocation_id: str) -> None:
        ran.append(invocation_id)

    limited = LimitedHook(hook, limit, Priority.DIGEST, due=lambda _, inv: inv == "i2")
    async with limit.slot(Priority.REPLY):
        # Every slot is taken: a hook with nothing to do returns at once all the same.
        await asyncio.wait_for(limited(object(), "i1"), 10)
        waiting = asyncio.create_task(limited(object(), "i2"))
        await asyncio.sleep(0.05)
        assert not waiting.done() and limit.waiting == 1
    await asyncio.wait_for(waiting, 10)
    assert ran == ["i2"]


class CountingSummarizer:
    """The bot's summariser, held at a gate, counting the summaries running at once."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.running = self.peak = self.started = 0
        self.release = asyncio.Event()

    async def summarize(self, session: Any) -> Any:
        self.running += 1
        self.started += 1
        self.peak = max(self.peak, self.running)
        try:
            await self.release.wait()
            return await self.inner.summarize(session)
        finally:
            self.running -= 1


async def test_limits_many_summary_commands_run_two_at_a_time_and_each_is_answered(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    commands = 8
    bot = await _thread_with_history(
        slack,
        start_bot,
        [json.dumps(RECORD)] * 6,
        max_concurrent_invocations=2,
        user_rate_burst=6,
    )
    summaries = bot.services.summarizer = CountingSummarizer(bot.services.summarizer)
    acks = await asyncio.gather(*(bot.send_command("/summary", LINK) for _ in range(commands)))
    shortcut = bot.message_shortcut(
        "summarize_thread", channel="C1", ts=ROOT, thread_ts=ROOT, user="U2"
    )
    await bot.send_payload(shortcut)
    await asyncio.sleep(0.3)
    # U1's first message took one of the six tokens: five commands and U2's shortcut wait
    # for the two slots, U1's other commands were told busy in their acks.
    texts = [await ack.text() for ack in acks]
    assert sum(BUSY_TEXT in t for t in texts) == commands - 5
    assert sum("Summarising" in t for t in texts) == 5
    assert (summaries.running, summaries.peak) == (2, 2)
    summaries.release.set()
    await bot.idle()
    assert (summaries.started, summaries.peak) == (6, 2)
    # Every admitted command, and the shortcut, got its summary.
    replies = [c["text"] for c in slack.calls_to("response_url")]
    assert len(replies) == 6 and all("order 4411" in t for t in replies)
