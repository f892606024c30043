"""The bot process the reliability tests kill and restart runs on the loop `support-bot
serve` ships with (uvloop), as its /healthz says."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import BotProcess
from tests.reliability.test_crash import bot_env


async def test_the_bot_process_serves_on_uvloop(
    slack: FakeSlackApi, openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    bot = BotProcess(bot_env(slack, openai, tmp_path / "bot.db"), tmp_path / "bot.log")
    await bot.start()
    try:
        async with aiohttp.ClientSession() as http, http.get(f"{bot.url}/healthz") as resp:
            health = await resp.json()
    finally:
        assert bot.stop() == 0
    assert health["ok"] is True
    assert health["event_loop"] == "uvloop"
