"""Idle-thread digests end to end: real SQLite/PostgreSQL, real HTTP to a fake Slack API,
the real summary agent on a scripted model, and a controllable clock."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from agents.events import Event
from agents.models.base import LlmRequest
from agents.models.scripted import ScriptedModel
from agents.summary import SummaryService
from bot.digests.job import DigestJob
from bot.slack.message_ts import SLACK_TS
from storage.database import Database
from storage.threads import ThreadKey
from tests.agents.summary.conftest import item, refund_events, refund_record
from tests.fakes.slack_api import FakeSlackApi

LEAD = "CLEAD"
IDLE = 1800.0


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def db(tmp_path: Any) -> AsyncIterator[Database]:
    database = await Database.open(f"sqlite+aiosqlite:///{tmp_path}/digests.db")
    yield database
    await database.close()


async def seed_thread(
    db: Database, thread_ts: str, events: list[Event], *, now: float, channel: str = "C1"
) -> ThreadKey:
    session = await db.sessions.create_session(app_name="support", user_id=f"U{thread_ts}")
    for event in events:
        await db.sessions.append_event(session, event)
    key = ThreadKey(team_id="T1", channel_id=channel, thread_ts=thread_ts)
    await db.threads.create(
        key,
        session_id=session.id,
        app_name="support",
        user_id=session.user_id,
        owner_agent="support_supervisor",  # answered: only answered threads get digests
        now=now,
    )
    return key


def job(db: Database, client: AsyncWebClient, clock: Clock, model: Any, **kw: Any) -> DigestJob:
    return DigestJob(
        db=db,
        summarizer=SummaryService(model),
        client=client,
        lead_channel=kw.pop("lead_channel", LEAD),
        idle_after=IDLE,
        clock=clock,
        owner=kw.pop("owner", "digest-test"),
        **kw,
    )


def greeting(n: int) -> list[Event]:
    from tests.agents.summary.conftest import agent, user

    return [
        user(f"hello from thread {n}", custom_metadata={SLACK_TS: f"{n}.1"}),
        agent("Hi, how can I help?"),
    ]


def greeting_record(request: LlmRequest) -> str:
    """A valid record for a greeting thread, citing its first event."""
    return json.dumps({"goal": "Say hello", "facts": [item("The user said hello", "e1")],
                       "decisions": [], "commitments": [], "open_questions": []})  # fmt: skip


def all_slack_text(slack: FakeSlackApi) -> str:
    return json.dumps([c.args for c in slack.calls])


async def test_digest_idle_thread_gets_exactly_one_digest(
    db: Database, client: AsyncWebClient, slack: FakeSlackApi
) -> None:
    clock = Clock()
    await seed_thread(db, "100.000001", greeting(100), now=clock.now)
    digests = job(db, client, clock, ScriptedModel([greeting_record]))
    assert await digests.run_once() == []  # not idle yet
    clock.now += IDLE + 1
    (outcome,) = await digests.run_once()
    assert outcome.outcome == "posted"
    assert await digests.run_once() == []
    assert len(slack.calls_to("chat.postMessage")) == 1
    stored = await db.digests.get(outcome.digest_id or 0)
    assert stored is not None and stored.slack_ts == outcome.slack_ts


async def test_digest_refund_example_links_commitment_and_open_question(
    db: Database, client: AsyncWebClient, slack: FakeSlackApi
) -> None:
    clock = Clock()
    key = await seed_thread(db, "1.1", refund_events(), now=clock.now)
    record = refund_record(
        open_questions=[item("Is B-2040 affected too?", "e8")],
    )
    model = ScriptedModel([json.dumps(record)])
    clock.now += IDLE + 1
    (outcome,) = await job(db, client, clock, model).run_once()
    assert outcome.outcome == "posted", outcome.problems
    (post,) = slack.calls_to("chat.postMessage")
    assert post["channel"] == LEAD
    blocks = json.dumps(post["blocks"])
    thread_link = slack.calls_to("chat.getPermalink")[0]
    assert thread_link["message_ts"] == key.thread_ts
    # The commitment cites e7, the agent's reply posted as 1.3; the question e8 (1.4).
    assert "$12.50" in blocks and "five working days" in blocks
    assert "p13?thread_ts=1.1&cid=C1|e7>" in blocks
    assert "B-2040" in blocks and "p14?thread_ts=1.1&cid=C1|e8>" in blocks
    assert "billing_agent" in blocks  # the owning agent
    memory = await db.memory.search("U1.1")
    assert {m.kind for m in memory} == {"fact", "commitment"}


async def test_digest_failed_twice_posts_unavailable_and_no_unchecked_text(
    db: Database, client: AsyncWebClient, slack: FakeSlackApi
) -> None:
    clock = Clock()
    key = await seed_thread(db, "1.1", refund_events(), now=clock.now)
    bad = refund_record(goal="UNCHECKED GOAL TEXT")  # drops B-2040 both times
    model = ScriptedModel([json.dumps(bad), json.dumps(bad)])
    clock.now += IDLE + 1
    (outcome,) = await job(db, client, clock, model).run_once()
    assert outcome.outcome == "unavailable"
    assert "dropped entity B-2040" in outcome.problems
    text = all_slack_text(slack)
    assert "Summary unavailable" in text and "dropped entity B-2040" in text
    assert "UNCHECKED GOAL TEXT" not in text
    thread = await db.threads.get(key)
    assert thread is not None and thread.needs_attention
    # Only the notice's durable intent is stored: no record.
    notice = await db.digests.latest_for_session(thread.session_id)
    assert notice is not None and notice.kind == "unavailable" and notice.record == {}
    assert notice.slack_ts == outcome.slack_ts
    clock.now += IDLE
    assert await job(db, client, clock, ScriptedModel()).run_once() == []


async def test_digest_crashed_claimer_lease_expires_then_one_digest(
    db: Database, client: AsyncWebClient, slack: FakeSlackApi
) -> None:
    clock = Clock()
    key = await seed_thread(db, "100.000001", greeting(100), now=clock.now)
    clock.now += IDLE + 1
    # Another process claimed the thread and died mid-summary.
    assert await db.threads.claim(key, owner="dead", now=clock.now, lease_seconds=600)
    digests = job(db, client, clock, ScriptedModel([greeting_record]), lease_seconds=600)
    assert await digests.run_once() == []
    clock.now += 601
    assert [o.outcome for o in await digests.run_once()] == ["posted"]
    assert await digests.run_once() == []
    assert len(slack.calls_to("chat.postMessage")) == 1


async def test_digest_new_activity_updates_the_threads_one_message_saying_what_changed(
    db: Database, client: AsyncWebClient, slack: FakeSlackApi
) -> None:
    from tests.agents.summary.conftest import user

    clock = Clock()
    key = await seed_thread(db, "100.000001", greeting(100), now=clock.now)
    clock.now += IDLE + 1

    def richer(request: LlmRequest) -> str:
        facts = [item("The user said hello", "e1"), item("The user said hello again", "e3")]
        return json.dumps({"goal": "Say hello", "facts": facts, "decisions": [],
                           "commitments": [], "open_questions": []})  # fmt: skip

    digests = job(db, client, clock, ScriptedModel([greeting_record, richer]))
    (first,) = await digests.run_once()
    thread = await db.threads.get(key)
    assert thread is not None
    session = await db.sessions.get_session(
        app_name="support", user_id=thread.user_id, session_id=thread.session_id
    )
    assert session is not None
    clock.now += 60
    await db.sessions.append_event(
        session, user("hello again", custom_metadata={SLACK_TS: "100.3"})
    )
    await db.threads.touch(key, now=clock.now)
    assert await digests.run_once() == []
    clock.now += IDLE + 1
    (second,) = await digests.run_once()
    assert second.outcome == "posted"
    stored = await db.digests.get(second.digest_id or 0)
    assert stored is not None and stored.supersedes_digest_id == first.digest_id
    # One message per thread in the lead channel: the second digest updated the first.
    assert len(slack.calls_to("chat.postMessage")) == 1
    (update,) = slack.calls_to("chat.update")
    assert update["ts"] == first.slack_ts == second.slack_ts
    shown = json.dumps(update["blocks"])
    assert "Updated handoff digest" in shown
    assert "Updated after 1 new message in the thread: 1 new fact." in shown
    # Memory keeps each item once: the re-digest added only the new fact.
    remembered = [m.text for m in await db.memory.search(thread.user_id)]
    assert sorted(remembered) == ["The user said hello", "The user said hello again"]
    assert update["metadata"]["event_payload"]["digest_id"] == second.digest_id
    assert await db.digests.posted_pages(second.digest_id or 0) == {1: first.slack_ts}


async def test_digest_whose_lead_message_was_deleted_in_slack_is_posted_anew(
    db: Database, client: AsyncWebClient, slack: FakeSlackApi
) -> None:
    from tests.agents.summary.conftest import user

    clock = Clock()
    key = await seed_thread(db, "100.000001", greeting(100), now=clock.now)
    clock.now += IDLE + 1
    digests = job(db, client, clock, ScriptedModel([greeting_record, greeting_record]))
    (first,) = await digests.run_once()
    del slack.messages[LEAD][first.slack_ts or ""]  # a lead deleted it
    thread = await db.threads.get(key)
    assert thread is not None
    session = await db.sessions.get_session(
        app_name="support", user_id=thread.user_id, session_id=thread.session_id
    )
    assert session is not None
    await db.sessions.append_event(
        session, user("hello again", custom_metadata={SLACK_TS: "100.3"})
    )
    clock.now += IDLE + 1
    await db.threads.touch(key, now=clock.now - IDLE - 1)
    (second,) = await digests.run_once()
    assert second.outcome == "posted" and second.slack_ts != first.slack_ts
    [shown] = slack.messages[LEAD].values()
    assert shown["ts"] == second.slack_ts
    assert shown["metadata"]["event_payload"]["digest_id"] == second.digest_id


async def test_digest_without_lead_channel_is_stored_not_posted(
    db: Database, client: AsyncWebClient, slack: FakeSlackApi
) -> None:
    clock = Clock()
    await seed_thread(db, "100.000001", greeting(100), now=clock.now)
    clock.now += IDLE + 1
    (outcome,) = await job(
        db, client, clock, ScriptedModel([greeting_record]), lead_channel=None
    ).run_once()
    assert outcome.outcome == "stored"
    assert slack.calls_to("chat.postMessage") == []
    assert [d.id for d in await db.digests.list_recent()] == [outcome.digest_id]


async def test_digest_two_processes_on_postgres_digest_each_thread_once(
    postgres_url: str, client: AsyncWebClient, slack: FakeSlackApi
) -> None:
    clock = Clock()
    first, second = await Database.open(postgres_url), await Database.open(postgres_url)
    try:
        for n in range(300):
            await seed_thread(first, f"{1000 + n}.000001", greeting(n), now=clock.now)
        clock.now += IDLE + 1
        model = ScriptedModel([greeting_record] * 300)
        jobs = [job(db, client, clock, model, batch=500) for db in (first, second)]
        results = await asyncio.gather(*(j.run_once() for j in jobs))
        assert sum(len(r) for r in results) == 300
        posts = slack.calls_to("chat.postMessage")
        assert len(posts) == 300
        assert len(await first.digests.list_recent(limit=1000)) == 300
        assert all(len(r) > 0 for r in results), "both processes should have taken work"
        assert await jobs[0].run_once() == [] and await jobs[1].run_once() == []
    finally:
        await first.close()
        await second.close()
