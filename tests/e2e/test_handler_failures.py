"""A failure anywhere in handling a message, before the invocation too, leaves a notice
in the thread and no message in flight: the user is never left without an answer."""

from __future__ import annotations

from typing import Any

import pytest

from agents.models.scripted import ScriptedModel
from bot.slack.render.blocks import FAILURE_TEXT
from storage.errors import StorageWriteError
from tests.e2e.conftest import StartBot
from tests.e2e.harness import dm
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi


async def test_thread_map_failure_before_the_invocation_leaves_a_notice_and_a_cleared_row(
    start_bot: StartBot, slack: FakeSlackApi, database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The model is never reached: a call would fail the test (no step is scripted).
    bot = await start_bot(support_tree(ScriptedModel([])))

    async def refused(*_: Any, **__: Any) -> Any:
        raise StorageWriteError("the database refused a write: disk full")

    # The thread and its session cannot be mapped (one write): the failure comes before
    # any invocation.
    monkeypatch.setattr(database.threads, "create", refused)
    assert (await bot.send_event(dm("hello", ts="1700000100.000100"))).status == 200
    await bot.idle()
    texts = [m["text"] for m in slack.thread("D1", "1700000100.000100") if m.get("bot_id")]
    assert texts == [FAILURE_TEXT]
    assert await database.inflight.count() == 0
