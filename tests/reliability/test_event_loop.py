"""The bot process the reliability tests kill and restart runs on the loop `support-bot
serve` runs on: asyncio's by default, uvloop with `EVENT_LOOP=uvloop`, as /healthz says."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import BotProcess, free_port
from tests.reliability.test_crash import bot_env


async def test_the_bot_process_serves_on_the_configured_loop(
    slack: FakeSlackApi, openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    seen = {}
    env = bot_env(slack, openai, tmp_path / "bot.db")
    env.pop("EVENT_LOOP", None)
    for name, extra in (("default", {}), ("uvloop", {"EVENT_LOOP": "uvloop"})):
        bot = BotProcess({**env, **extra, "PORT": str(free_port())}, tmp_path / f"{name}.log")
        if not extra:
            bot.env.pop("EVENT_LOOP", None)
        health = json.loads(await bot.page("/healthz"))
        assert health["ok"] is True
        seen[name] = health["event_loop"]
    assert seen == {"default": "asyncio", "uvloop": "uvloop"}
