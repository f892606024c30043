"""Digests, memory and summary runs: what the summary pipeline keeps."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from pydantic import BaseModel

from storage import Database
from storage.threads import ThreadKey


class Record(BaseModel):
    goal: str
    facts: list[str]


async def test_digest_add_get_and_post(db: Database) -> None:
    key = ThreadKey(team_id="T1", channel_id="C1", thread_ts="1.0")
    first = await db.digests.add(
        record=Record(goal="refund", facts=["paid twice"]),
        source_session_id="s1",
        thread=key,
        user_id="u1",
        cited_event_ids=["e1", "e3"],
        attempts=2,
        problems=["fact without citation"],
        cost=0.0012,
        prompt_tokens=900,
        completion_tokens=120,
        created_at=10.0,
    )
    second = await db.digests.add(
        record={"goal": "refund, again"},
        source_session_id="s1",
        supersedes_digest_id=first,
        created_at=11.0,
    )
    await db.digests.add(record={"goal": "other"}, source_session_id="s2", created_at=12.0)

    assert await db.digests.set_posted(first, "1700000000.0001")
    assert not await db.digests.set_posted(9999, "1.0")
    stored = await db.digests.get(first)
    assert stored is not None
    assert stored.record == {"goal": "refund", "facts": ["paid twice"]}
    assert (stored.thread, stored.user_id, stored.slack_ts) == (key, "u1", "1700000000.0001")
    assert (stored.cited_event_ids, stored.attempts, stored.problems) == (
        ["e1", "e3"],
        2,
        ["fact without citation"],
    )
    assert (stored.cost, stored.prompt_tokens, stored.completion_tokens) == (0.0012, 900, 120)
    latest = await db.digests.latest_for_session("s1")
    assert latest is not None
    assert (latest.id, latest.supersedes_digest_id, latest.thread) == (second, first, None)
    assert await db.digests.latest_for_session("nope") is None
    assert [d.record["goal"] for d in await db.digests.list_recent(2)] == ["other", "refund, again"]


async def test_memory_search_is_per_user_and_by_words(db: Database) -> None:
    await db.memory.add(
        user_id="u1", session_id="s1", kind="fact", text="Uses SSO via Okta", event_ids=["e2"]
    )
    await db.memory.add(
        user_id="u1",
        session_id="s1",
        kind="commitment",
        text="Refund 100% by Friday",
        event_ids=["e4", "e5"],
    )
    await db.memory.add(user_id="u2", session_id="s2", kind="fact", text="Uses SSO", event_ids=[])

    assert [m.text for m in await db.memory.search("u1")] == [
        "Refund 100% by Friday",
        "Uses SSO via Okta",
    ]
    sso = await db.memory.search("u1", "okta sso")
    assert [(m.kind, m.event_ids, m.session_id) for m in sso] == [("fact", ["e2"], "s1")]
    assert [m.kind for m in await db.memory.search("u1", "100%")] == ["commitment"]
    assert await db.memory.search("u1", "10_%") == []
    assert len(await db.memory.search("u1", limit=1)) == 1
    await db.memory.add(
        user_id="u1", session_id="s1", kind="claim", text="Promised $500", event_ids=["e1"]
    )
    assert [m.kind for m in await db.memory.search("u1", "$500")] == ["claim"]
    with pytest.raises(ValueError, match="kind"):
        await db.memory.add(user_id="u1", session_id="s1", kind="rumour", text="x", event_ids=[])  # type: ignore[arg-type]


@dataclass
class Run:
    session_id: str
    first_attempt_pass: bool
    fallback: bool
    attempts: int
    cost: float
    problems: list[str] = field(default_factory=list)
    prompt_tokens: int = 100
    completion_tokens: int = 20
    latency_s: float = 1.5
    model: str | None = "openai/gpt-4o-mini"


async def test_summary_run_totals(db: Database) -> None:
    assert await db.summary_runs.totals() == {
        "count": 0,
        "first_attempt_pass_rate": 0.0,
        "fallback_rate": 0.0,
        "cost_per_summary": 0.0,
        "total_cost": 0.0,
    }
    await db.summary_runs.add(Run("s1", True, False, 1, cost=0.01))
    await db.summary_runs.add(Run("s2", False, False, 2, cost=0.02, problems=["uncited"]))
    await db.summary_runs.add(Run("s3", False, True, 2, cost=0.03, model=None))
    await db.summary_runs.add(Run("s4", True, False, 1, cost=0.02))

    totals = await db.summary_runs.totals()
    assert totals["count"] == 4
    assert totals["first_attempt_pass_rate"] == 0.5
    assert totals["fallback_rate"] == 0.25
    assert totals["cost_per_summary"] == pytest.approx(0.02)
    assert totals["total_cost"] == pytest.approx(0.08)


async def test_stats_count_each_model_call_an_answer_stands_for(db: Database) -> None:
    from agents.events import Event, Part, Usage

    session = await db.sessions.create_session(app_name="support", user_id="u1")
    await db.sessions.append_event(session, Event(author="user", parts=(Part(text="refund?"),)))
    # A decide-first step: decide, then act, in one answer.
    decided = Usage(prompt_tokens=30, completion_tokens=5, calls=2)
    await db.sessions.append_event(
        session, Event(author="billing_agent", parts=(Part(text="Which charge?"),), usage=decided)
    )
    plain = Usage(prompt_tokens=10, completion_tokens=2)  # one call, not counted apart
    await db.sessions.append_event(
        session, Event(author="billing_agent", parts=(Part(text="Done."),), usage=plain)
    )
    stats = await db.stats.collect()
    usage = stats.usage["billing_agent"]
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (3, 40, 7)
