"""The Socket Mode bind address on a live socket: `support-bot socket` serves /healthz
and /metrics on loopback only (nothing else reaches them, not even another loopback
address), and `HOST` opens them."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_socket import FakeSocketModeServer
from tests.reliability.support import REPO, free_port

# 127.0.0.2 is loopback on Linux, but a server bound to 127.0.0.1 does not take it: the
# stand-in for "any other address" that needs no second network interface.
OTHER = "127.0.0.2"


async def _get(host: str, port: int, path: str) -> int | None:
    """The status of GET `path`, or None when the connection is refused."""
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(
                f"http://{host}:{port}{path}", timeout=aiohttp.ClientTimeout(5)
            ) as r:
                return r.status
    except aiohttp.ClientConnectionError:
        return None


@asynccontextmanager
async def socket_bot(tmp_path: Path, host: str | None) -> AsyncIterator[int]:
    """`python -m bot.cli socket` connected to fake Slack; yields its PORT."""
    async with FakeSocketModeServer() as ws, FakeSlackApi(socket_url="") as slack:
        slack.socket_url = ws.url
        port = free_port()
        env = {
            **os.environ,
            "SLACK_BOT_TOKEN": "xoxb-test",
            "SLACK_APP_TOKEN": "xapp-test",
            "SLACK_API_URL": slack.url,
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
            "MODEL": "openai/test",
            "PORT": str(port),
            "LOG_LEVEL": "WARNING",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        env.pop("HOST", None)
        if host is not None:
            env["HOST"] = host
        log = (tmp_path / "socket.log").open("ab")
        proc = subprocess.Popen(  # noqa: ASYNC220 - returns at once; health is polled below
            [sys.executable, "-m", "bot.cli", "socket"], cwd=REPO, env=env, stdout=log, stderr=log
        )
        log.close()
        try:
            await ws.wait_connected(within=60)
            for _ in range(300):
                if await _get("127.0.0.1", port, "/healthz") == 200:
                    break
                assert proc.poll() is None, (tmp_path / "socket.log").read_text()[-2000:]
                await asyncio.sleep(0.1)
            yield port
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(proc.wait, 30)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="127.0.0.2 is loopback on Linux")
async def test_socket_mode_health_and_metrics_listen_on_loopback_only(tmp_path: Path) -> None:
    async with socket_bot(tmp_path, host=None) as port:
        assert await _get("127.0.0.1", port, "/healthz") == 200
        assert await _get("127.0.0.1", port, "/metrics") == 200
        assert await _get(OTHER, port, "/healthz") is None
        assert await _get(OTHER, port, "/metrics") is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="127.0.0.2 is loopback on Linux")
async def test_socket_mode_host_opens_health_and_metrics(tmp_path: Path) -> None:
    async with socket_bot(tmp_path, host="0.0.0.0") as port:
        assert await _get(OTHER, port, "/healthz") == 200
        assert await _get(OTHER, port, "/metrics") == 200
