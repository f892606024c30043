"""Duplicates: 500 events, each delivered 1 to 4 times (concurrently, as Slack retries
with `X-Slack-Retry-Num`, as the app_mention/message pair, and after a restart of the
bot on the same database) give exactly 500 replies and 500 model invocations."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from tests.e2e.harness import BotHarness, channel_message, dm, open_database
from tests.e2e.replies import answer_of, context_text
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import EchoModel, bot_messages, echo_tree

EVENTS = 500


def plan(rng: random.Random, slack: FakeSlackApi) -> list[dict[str, Any]]:
    """Each event with its deliveries: how many, how, and which wait for the restart."""
    events = []
    for i in range(EVENTS):
        ts = slack.next_ts()
        mention = i % 10 == 0
        if mention:
            event = channel_message(f"q{i}", ts=ts, mention=True, kind="app_mention")
            twin = channel_message(f"q{i}", ts=ts, mention=True)
        else:
            # One DM each: top-level messages in one DM would be one conversation.
            event, twin = dm(f"q{i}", ts=ts, channel=f"D{i}", user=f"U{i}"), None
        copies = rng.randint(1, 4)
        events.append(
            {
                "event": event,
                "twin": twin,
                "channel": event["channel"],
                "ts": ts,
                "event_id": f"Ev{i:05d}",
                "copies": copies,
                "mode": rng.choice(["concurrent", "retry", "after_restart"]),
            }
        )
    return events


async def deliver_before_restart(bot: BotHarness, item: dict[str, Any]) -> list[int]:
    event, event_id, copies = item["event"], item["event_id"], item["copies"]
    statuses = []
    if item["twin"] is not None:
        # Slack sends a mention twice, as app_mention and as message, with different ids.
        statuses.append((await bot.send_event(item["twin"], event_id=event_id + "m")).status)
    if item["mode"] == "concurrent":
        sends = [bot.send_event(event, event_id=event_id) for _ in range(copies)]
        statuses += [r.status for r in await asyncio.gather(*sends)]
    elif item["mode"] == "retry":
        for attempt in range(copies):
            retry = attempt or None
            statuses.append(
                (await bot.send_event(event, event_id=event_id, retry_num=retry)).status
            )
    else:
        statuses.append((await bot.send_event(event, event_id=event_id)).status)
    return statuses


async def test_duplicates_500_events_delivered_up_to_4_times_give_500_replies(
    slack: FakeSlackApi, tmp_path: Path
) -> None:
    rng = random.Random(9)
    items = plan(rng, slack)
    model = EchoModel()
    db = await open_database(tmp_path)
    try:
        # Load from one user, not the per-user rate, is under test here.
        first = await BotHarness.start(
            slack, agent=echo_tree(model), db=db, summarizer=object(), user_rate_burst=100_000
        )
        for start in range(0, EVENTS, 25):
            batch = items[start : start + 25]
            results = await asyncio.gather(*(deliver_before_restart(first, i) for i in batch))
            assert {s for r in results for s in r} == {200}
        await first.idle(120)  # a liveness bound, not a timing target: CI machines are noisy
        await first.stop()

        second = await BotHarness.start(
            slack, agent=echo_tree(model), db=db, summarizer=object(), user_rate_burst=100_000
        )
        late = [i for i in items if i["mode"] == "after_restart" and i["copies"] > 1]
        for item in late:
            for n in range(1, item["copies"]):
                resp = await second.send_event(
                    item["event"], event_id=item["event_id"], retry_num=n
                )
                assert resp.status == 200
        await second.idle(120)
        await second.stop()
    finally:
        await db.close()

    replies = 0
    for n, item in enumerate(items):
        mine = bot_messages(slack, item["channel"], item["ts"])
        assert [answer_of(m) for m in mine] == [f"Answer to: q{n}"]
        assert "support_supervisor" in context_text(mine[0])
        replies += len(mine)
    assert replies == EVENTS
    assert model.calls == EVENTS
    assert sum(i["copies"] for i in items) + EVENTS // 10 > EVENTS * 2
