"""End to end: duplicates, ordering and request signing."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.signature import SignatureVerifier

from agents.llm.agent import LlmAgent
from agents.models.base import LlmRequest
from agents.models.scripted import ScriptedModel, deltas
from tests.e2e.conftest import StartBot
from tests.e2e.harness import channel_message, dm, sign
from tests.e2e.replies import answers, shown, wait_answers
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi


def echo(request: LlmRequest) -> str:
    return f"echo: {request.contents[-1].text}"


async def test_delivery_same_event_three_times_concurrently_gives_one_reply(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([echo])))
    event = dm("once please", ts="1700000100.000100")
    responses = await asyncio.gather(
        bot.send_event(event, event_id="EvSAME"),
        bot.send_event(event, event_id="EvSAME", retry_num=1),
        bot.send_event(event, event_id="EvSAME", retry_num=2),
    )
    assert [r.status for r in responses] == [200, 200, 200]
    await wait_answers(slack)
    await bot.idle()
    assert len(slack.calls_to("chat.postMessage")) == 1
    assert len(answers(slack)) == 1


async def test_delivery_mention_and_message_double_delivery_gives_one_reply(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([echo])))
    ts = "1700000110.000100"
    await asyncio.gather(
        bot.send_event(channel_message("hi", ts=ts, mention=True, kind="app_mention")),
        bot.send_event(channel_message("hi", ts=ts, mention=True)),
    )
    await wait_answers(slack)
    await bot.idle()
    assert len(slack.calls_to("chat.postMessage")) == 1
    assert len(answers(slack)) == 1


async def test_delivery_twenty_messages_in_one_thread_answered_in_order(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    agent = LlmAgent(name="support_supervisor", model=ScriptedModel([echo] * 20))
    bot = await start_bot(agent)
    root = "1700000200.000000"
    for i in range(20):
        ts = f"17000002{i + 1:02d}.000100"
        await bot.send_event(dm(f"message {i}", ts=ts, thread_ts=root if i else None))
        if i == 0:
            root = ts
    await wait_answers(slack, 20, within=30)
    await bot.idle()
    replies = [shown(m) for m in answers(slack)]
    assert replies == [f"echo: message {i}" for i in range(20)]


async def test_delivery_forged_unsigned_and_stale_requests_get_401(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])))
    body = json.dumps(
        {
            "type": "event_callback",
            "team_id": "T1",
            "event_id": "EvX",
            "event": dm("hi", ts="1700000300.000100"),
        }
    )
    forged = sign(body, secret="wrong-secret")
    stale = sign(body, timestamp=int(time.time()) - 301)
    assert (await bot.post(body, "application/json", signed=False)).status == 401
    assert (await bot.post(body, "application/json", forged, signed=False)).status == 401
    assert (await bot.post(body, "application/json", stale, signed=False)).status == 401
    await bot.idle()
    assert slack.calls == []


async def test_delivery_checks_each_signature_exactly_once(
    slack: FakeSlackApi, start_bot: StartBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[bytes] = []
    check = SignatureVerifier.is_valid_request

    def counted(self: SignatureVerifier, body: str | bytes, headers: dict[str, str]) -> bool:
        checks.append(body if isinstance(body, bytes) else body.encode())
        return check(self, body, headers)

    monkeypatch.setattr(SignatureVerifier, "is_valid_request", counted)
    bot = await start_bot(support_tree(ScriptedModel([echo])))
    assert (await bot.send_event(dm("checked once", ts="1700000400.000100"))).status == 200
    await wait_answers(slack)
    assert len(checks) == 1


def _taken_over(tmp_path: Path) -> None:
    """A peer takes the message over (this process was thought dead)."""
    conn = sqlite3.connect(tmp_path / "bot.db")
    with conn:
        conn.execute("UPDATE inflight SET owner = 'peer'")
    conn.close()


async def test_delivery_taken_over_before_its_turn_posts_nothing(
    slack: FakeSlackApi, start_bot: StartBot, tmp_path: Path
) -> None:
    model = ScriptedModel([])  # the peer answers: this process never calls the model
    bot = await start_bot(support_tree(model))
    root = "1700000500.000100"
    real_accept = bot.services.db.inflight.accept

    async def accept_then_lose(*args: Any, **kwargs: Any) -> bool:
        accepted = await real_accept(*args, **kwargs)
        _taken_over(tmp_path)
        return accepted

    bot.services.db.inflight.accept = accept_then_lose  # type: ignore[method-assign]
    assert (await bot.send_event(dm("mine?", ts=root))).status == 200
    await bot.idle()
    # The peer answers: the turn's start found the row gone, so no model call, no
    # message, and the user's event is not stored twice.
    assert model.requests == []
    assert [c.method for c in slack.calls if c.method.startswith("chat.")] == []
    conn = sqlite3.connect(tmp_path / "bot.db")
    with conn:
        rows = conn.execute("SELECT owner, stage FROM inflight").fetchall()
        stored = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    conn.close()
    assert rows == [("peer", "accepted")] and stored == 0  # left whole for the peer


async def test_delivery_taken_over_while_its_stream_opens_leaves_no_message_behind(
    slack: FakeSlackApi, start_bot: StartBot, tmp_path: Path
) -> None:
    model = ScriptedModel([deltas("Let me ", "check ", "that.")], chunk_delay=0.2)
    bot = await start_bot(support_tree(model))
    root = "1700000500.000100"
    # Just as Slack starts the reply's stream, before this process records it.
    slack.before_answer("chat.startStream", lambda _call: _taken_over(tmp_path))
    assert (await bot.send_event(dm("mine?", ts=root))).status == 200
    await slack.wait_for("chat.delete")
    await bot.idle()
    # The peer answers: this process stopped its stream and took the message back.
    assert len(slack.calls_to("chat.stopStream")) == 1
    assert slack.calls_to("chat.appendStream") == []
    assert [m for m in slack.thread("D1", root) if m.get("bot_id")] == []
