"""The transport-neutral turn: a thread and its session, the runner, the outcome."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agents.handoff import HANDOFF_AUTHOR
from agents.models.base import ModelError
from agents.models.scripted import ScriptedModel, transfer
from agents.runner import Runner, find_agent_to_run
from bot.slack.message_ts import SlackTsPlugin, message_ts, turn_metadata
from bot.threads.handoff import hand_to_agent, handoff_agents
from bot.threads.turn import TurnOutcome, ensure_thread, run_turn
from storage import Database
from storage.delivery.inflight import InflightKey, MessageTakenOverError
from storage.threads import ThreadKey
from tests.e2e.trees import support_tree

KEY = ThreadKey(team_id="T1", channel_id="C1", thread_ts="1700000000.000100")


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    try:
        yield database
    finally:
        await database.close()


async def test_ensure_thread_maps_once_and_brings_a_handed_off_thread_back(db: Database) -> None:
    record = await ensure_thread(
        db, KEY, None, new_session_id="s1", app_name="support", user_id="U1"
    )
    assert (record.session_id, record.status) == ("s1", "active")
    session = await db.sessions.of_thread(record)
    assert session is not None and session.events == []

    await db.threads.set_status(KEY, "handed_off")
    stale = await db.threads.get(KEY)
    again = await ensure_thread(
        db, KEY, stale, new_session_id="ignored", app_name="support", user_id="U1"
    )
    assert (again.session_id, again.status) == ("s1", "active")
    assert await db.threads.get(KEY) == again


async def test_run_turn_collects_reply_and_transfer_path(db: Database) -> None:
    model = ScriptedModel([transfer("billing_agent"), "A refund is on its way."])
    runner = Runner(
        agent=support_tree(model),
        app_name="support",
        session_service=db.sessions,
        plugins=[SlackTsPlugin()],
    )
    record = await ensure_thread(
        db, KEY, None, new_session_id="s1", app_name="support", user_id="U1"
    )

    outcome = await run_turn(
        runner,
        user_id=record.user_id,
        session_id=record.session_id,
        text="I was charged twice",
        invocation_id="inv1",
        metadata=turn_metadata("1700000000.000100", "1700000000.000200"),
    )

    assert outcome.answered
    assert outcome.reply is not None and outcome.reply.text == "A refund is on its way."
    assert message_ts(outcome.reply) == "1700000000.000200"
    assert outcome.path == ["support_supervisor", "billing_agent"] == outcome.transfers
    session = await db.sessions.of_thread(record)
    assert session is not None
    assert message_ts(session.events[0]) == "1700000000.000100"
    # The stored events of the invocation give the same outcome (start-up recovery).
    rebuilt = TurnOutcome.of_invocation(session.events, "inv1")
    assert (rebuilt.reply, rebuilt.path) == (outcome.reply, outcome.path)


async def test_run_turn_stores_the_callers_write_with_the_users_event(db: Database) -> None:
    """Slack marks its message started in the transaction that stores the user's event
    (`with_user_event`); once a peer has taken the message over, that write refuses, so
    the turn stores nothing and runs no agent."""
    model = ScriptedModel(["Hello."])
    runner = Runner(agent=support_tree(model), app_name="support", session_service=db.sessions)
    record = await ensure_thread(
        db, KEY, None, new_session_id="s1", app_name="support", user_id="U1"
    )
    first, second = (
        InflightKey(team_id="T1", channel_id="C1", message_ts=ts) for ts in ("1.1", "1.2")
    )
    for n, tracked in enumerate((first, second)):
        assert await db.inflight.accept(
            tracked, thread_ts=KEY.thread_ts, message={}, delivery_key=f"d{n}", owner="me",
            now=1.0,
        )  # fmt: skip

    def started(tracked: InflightKey, invocation_id: str) -> object:
        return db.inflight.start_in_append(
            tracked, owner="me", invocation_id=invocation_id, now=2.0, placeholder_ts="1.5"
        )

    outcome = await run_turn(
        runner, user_id="U1", session_id=record.session_id, text="hi",
        invocation_id="inv1", with_user_event=started(first, "inv1"),
    )  # fmt: skip
    assert outcome.answered
    rows = {
        r.message_ts: r for r in await db.inflight.left_by_others("x", now=3.0, dead_after=None)
    }
    assert (rows["1.1"].stage, rows["1.1"].invocation_id, rows["1.1"].placeholder_ts) == (
        "started",
        "inv1",
        "1.5",
    )

    assert await db.inflight.take_over(rows["1.2"], owner="peer", now=3.0, dead_after=None)
    with pytest.raises(MessageTakenOverError):
        await run_turn(
            runner, user_id="U1", session_id=record.session_id, text="again",
            invocation_id="inv2", with_user_event=started(second, "inv2"),
        )  # fmt: skip
    assert len(model.requests) == 1  # the taken-over turn never reached the model
    session = await db.sessions.of_thread(record)
    assert session is not None
    assert [(e.author, e.text) for e in session.events] == [
        ("user", "hi"),
        ("support_supervisor", "Hello."),
    ]


async def test_a_failed_turn_names_its_error_code(db: Database) -> None:
    model = ScriptedModel([ModelError("down", code="model_unavailable")])
    runner = Runner(agent=support_tree(model), app_name="support", session_service=db.sessions)
    record = await ensure_thread(
        db, KEY, None, new_session_id="s1", app_name="support", user_id="U1"
    )

    outcome = await run_turn(runner, user_id="U1", session_id=record.session_id, text="hi")

    assert not outcome.answered
    assert outcome.error is not None
    assert outcome.failure == outcome.error.error_code
    assert outcome.transfers == []
    assert TurnOutcome().failure == "no_reply"


async def test_hand_to_agent_starts_a_session_that_routes_to_the_agent(db: Database) -> None:
    record = await ensure_thread(
        db, KEY, None, new_session_id="s1", app_name="support", user_id="U1"
    )
    old = await db.sessions.ensure_of_thread(record)
    root = support_tree(ScriptedModel())
    assert handoff_agents(root) == ["support_supervisor", "billing_agent"]

    new_id = await hand_to_agent(db, record, old, "billing_agent", "Goal: a refund.")

    moved = await db.threads.get(KEY)
    assert moved is not None
    assert (moved.session_id, moved.owner_agent, moved.source_session_id) == (
        new_id,
        "billing_agent",
        "s1",
    )
    fresh = await db.sessions.of_thread(moved)
    assert fresh is not None
    # The record is authored `handoff`, never by the target; its transfer routes to it.
    assert [(e.author, e.text) for e in fresh.events] == [(HANDOFF_AUTHOR, "Goal: a refund.")]
    assert find_agent_to_run(fresh, root).name == "billing_agent"
