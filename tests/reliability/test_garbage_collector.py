"""The served bot process sets its garbage collector for serving (`bot.garbage_collector`),
as `/metrics` shows: the start-up heap frozen, the shipped young threshold, and the
collections it ran."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import BotProcess, free_port
from tests.reliability.test_crash import bot_env


def gauge(page: str, name: str) -> float:
    values = [float(line.split()[-1]) for line in page.splitlines() if line.startswith(name + " ")]
    assert len(values) == 1, f"{name} not on /metrics once"
    return values[0]


async def test_the_served_bot_freezes_its_start_up_heap(
    slack: FakeSlackApi, openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    env = bot_env(slack, openai, tmp_path / "bot.db")
    env.pop("GC_YOUNG_THRESHOLD", None)
    bot = BotProcess({**env, "PORT": str(free_port())}, tmp_path / "bot.log")
    bot.env.pop("GC_YOUNG_THRESHOLD", None)
    page = await bot.page("/metrics")
    assert gauge(page, "support_bot_gc_young_threshold") == 50_000
    assert gauge(page, "support_bot_gc_frozen_objects") > 10_000
    assert 'python_gc_collections_total{generation="2"}' in page
