"""Feedback clicks: one row per person and reply, whoever delivers the click, and when."""

from __future__ import annotations

import asyncio
import dataclasses

from agents.handoff import handoff_event
from storage import Database
from storage.feedback import FeedbackClick

CLICK = FeedbackClick(
    team_id="T1",
    channel_id="D1",
    thread_ts="1700000000.000100",
    session_id="s1",
    event_id="e3",
    agent="billing_agent",
    user_id="U1",
    value="negative",
    marker="customer",
)
APP = {"app_name": "support_bot", "user_id": "U1"}


async def test_feedback_racing_copies_of_one_click_store_it_once(db: Database) -> None:
    # Ten copies of one click, through two engines as two bot processes would get them.
    other = await Database.open(db.url)
    try:
        stores = [db.feedback, other.feedback] * 5
        done = await asyncio.gather(*(s.record(CLICK, now=1.0) for s in stores))
    finally:
        await other.close()
    assert sorted(done) == ["duplicate"] * 9 + ["new"]
    assert await db.feedback.for_session_chain(**APP, session_id="s1") == {
        ("customer", "negative"): 1
    }


async def test_feedback_changed_mind_replaces_and_people_count_per_reply(db: Database) -> None:
    assert await db.feedback.record(CLICK, now=1.0) == "new"
    positive = dataclasses.replace(CLICK, value="positive")
    assert await db.feedback.record(positive, now=2.0) == "changed"
    assert await db.feedback.record(positive, now=3.0) == "duplicate"
    assert await db.feedback.for_session_chain(**APP, session_id="s1") == {
        ("customer", "positive"): 1
    }
    # Another person on the same reply, and the first person on another reply.
    await db.feedback.record(dataclasses.replace(CLICK, user_id="U2", marker="staff"), now=4.0)
    await db.feedback.record(dataclasses.replace(CLICK, event_id="e5"), now=5.0)
    assert await db.feedback.for_session_chain(**APP, session_id="s1") == {
        ("customer", "positive"): 1,
        ("customer", "negative"): 1,
        ("staff", "negative"): 1,
    }
    assert (await db.stats.collect()).feedback == {
        ("billing_agent", "positive"): 1,
        ("billing_agent", "negative"): 2,
    }


async def test_feedback_counts_the_sessions_a_session_was_handed_off_from(
    db: Database,
) -> None:
    """s2 was handed off from s1, s3 from s2: s3's counts take in all three, whose event
    ids repeat (e3 of s1 and e3 of s2 are two replies); s1's take in only its own, and a
    session nobody handed off from stays out."""
    for session, source in (("s1", None), ("s2", "s1"), ("s3", "s2"), ("s9", None)):
        made = await db.sessions.create_session(**APP, session_id=session)
        await db.sessions.append_event(
            made, handoff_event("record", target="billing_agent", source=source)
        )
    await db.feedback.record(CLICK, now=1.0)
    await db.feedback.record(dataclasses.replace(CLICK, session_id="s2"), now=2.0)
    await db.feedback.record(
        dataclasses.replace(CLICK, session_id="s3", user_id="U2", marker="staff"), now=3.0
    )
    await db.feedback.record(dataclasses.replace(CLICK, session_id="s9"), now=4.0)
    assert await db.feedback.for_session_chain(**APP, session_id="s3") == {
        ("customer", "negative"): 2,
        ("staff", "negative"): 1,
    }
    assert await db.feedback.for_session_chain(**APP, session_id="s1") == {
        ("customer", "negative"): 1
    }
