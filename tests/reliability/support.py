"""Shared pieces of the reliability scenarios: signed delivery to any bot URL, a bot
process, and what a thread shows in the fake Slack."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, ClassVar

import aiohttp

from agents.events import Usage
from agents.llm.agent import LlmAgent
from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ModelProfile
from bot.slack.render.blocks import FAILURE_TEXT, INTERRUPTED_TEXT
from tests.e2e.harness import SIGNING_SECRET, TEAM, BotHarness, open_database, sign
from tests.e2e.replies import finished
from tests.fakes.slack_api import FakeSlackApi

REPO = Path(__file__).resolve().parents[2]
NOTICES = (FAILURE_TEXT, INTERRUPTED_TEXT)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def event_body(event: dict[str, Any], *, event_id: str) -> str:
    return json.dumps(
        {
            "token": "legacy",
            "team_id": TEAM,
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": event_id,
            "event_time": int(time.time()),
            "event": event,
        }
    )


class Sender:
    """Posts signed Slack requests to `url` + /slack/events and returns the status."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = aiohttp.ClientSession()

    async def close(self) -> None:
        await self.http.close()

    async def post(
        self, body: str, *, content_type: str = "application/json", headers: dict[str, str]
    ) -> int:
        all_headers = {"Content-Type": content_type, **headers}
        async with self.http.post(f"{self.url}/slack/events", data=body, headers=all_headers) as r:
            await r.read()
            return r.status

    async def event(
        self, event: dict[str, Any], *, event_id: str, retry_num: int | None = None
    ) -> int:
        body = event_body(event, event_id=event_id)
        headers = sign(body)
        if retry_num is not None:
            headers |= {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "timeout"}
        return await self.post(body, headers=headers)


def bot_messages(slack: FakeSlackApi, channel: str, thread_ts: str) -> list[dict[str, Any]]:
    """The bot's messages in one thread, oldest first."""
    return [m for m in slack.thread(channel, thread_ts) if m.get("bot_id")]


def user_messages(slack: FakeSlackApi, channel: str, thread_ts: str) -> list[dict[str, Any]]:
    return [m for m in slack.thread(channel, thread_ts) if not m.get("bot_id")]


def settled(slack: FakeSlackApi, threads: dict[tuple[str, str], int]) -> bool:
    """Every thread shows as many finished bot messages as it has user messages (no
    "thinking" placeholder, no stream still open)."""
    for (channel, root), expected in threads.items():
        mine = bot_messages(slack, channel, root)
        if len(mine) < expected or not all(finished(m) for m in mine):
            return False
    return True


def integrity(db_file: Path) -> str:
    with sqlite3.connect(db_file) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


class BotProcess:
    """`python -m tests.reliability.bot_process` with the given environment."""

    # Every process started, so a test that fails half-way leaves none running
    # (`reap`, called after each test by tests/reliability/conftest.py).
    started: ClassVar[list[BotProcess]] = []

    def __init__(self, env: dict[str, str], log_file: Path) -> None:
        self.env = {**os.environ, **env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        self.port = int(env["PORT"])
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_file = log_file
        self.proc: subprocess.Popen[bytes] | None = None

    async def start(self, within: float = 30.0) -> None:
        log = self.log_file.open("ab")
        self.proc = subprocess.Popen(  # noqa: ASYNC220 - returns at once; we poll health below
            [sys.executable, "-m", "tests.reliability.bot_process"],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        BotProcess.started.append(self)
        log.close()
        deadline = time.monotonic() + within
        async with aiohttp.ClientSession() as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"bot exited: {self.log_file.read_text()[-2000:]}")
                try:
                    async with http.get(f"{self.url}/healthz") as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        raise TimeoutError("bot did not become healthy")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    @classmethod
    def reap(cls) -> None:
        """SIGKILL every started process still running, and forget them all."""
        for bot in cls.started:
            if bot.proc is not None and bot.proc.poll() is None:
                bot.kill()
        cls.started.clear()

    def stop(self) -> int:
        """SIGTERM (graceful drain) and wait; returns the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)

    async def page(self, path: str) -> str:
        """Start the process, GET `path` from it, and stop it (it must exit cleanly)."""
        await self.start()
        try:
            async with aiohttp.ClientSession() as http, http.get(f"{self.url}{path}") as resp:
                body = await resp.text()
        finally:
            assert self.stop() == 0
        return body


async def wait_until(check: Callable[[], bool], *, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


class EchoModel:
    """An instant model that answers with the user's latest words, recording how many
    requests it saw."""

    name = "echo"
    profile = ModelProfile()

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, request: LlmRequest) -> LlmResponse:
        self.calls += 1
        said = next((c.text for c in reversed(request.contents) if c.role == "user"), "?")
        return LlmResponse.from_text(f"Answer to: {said}", usage=Usage(prompt_tokens=10))


class StreamingEchoModel(EchoModel):
    """`EchoModel` streamed: its answer in two deltas `delay` seconds apart, slow enough
    that the reply's stream is started before the answer is complete."""

    def __init__(self, delay: float = 0.4) -> None:
        super().__init__()
        self.delay = delay

    async def generate_stream(self, request: LlmRequest) -> AsyncIterator[LlmResponse]:
        answer = await self.generate(request)
        half = len(answer.text) // 2
        for piece in (answer.text[:half], answer.text[half:]):
            yield LlmResponse.from_text(piece, partial=True)
            await asyncio.sleep(self.delay)
        yield answer


async def start_echo_bot(slack: FakeSlackApi, tmp_path: Path) -> tuple[Any, BotHarness]:
    """A database file in `tmp_path` and a bot on it answering with `EchoModel`."""
    db = await open_database(tmp_path)
    bot = await BotHarness.start(slack, agent=echo_tree(EchoModel()), db=db, summarizer=object())
    return db, bot


def echo_tree(model: EchoModel) -> LlmAgent:
    return LlmAgent(name="support_supervisor", instruction="Answer briefly.", model=model)


__all__ = ["NOTICES", "SIGNING_SECRET", "TEAM"]
