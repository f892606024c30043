"""The event loop: uvloop by default, for `support-bot` and for this suite alike;
`EVENT_LOOP=asyncio` runs the standard library's."""

from __future__ import annotations

import asyncio

import pytest

from bot.config import Settings
from bot.event_loop import run, running_loop_name


async def _loop_name() -> str:
    return running_loop_name()


def test_the_bot_runs_on_uvloop_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVENT_LOOP", raising=False)
    settings = Settings(_env_file=None)
    assert settings.event_loop == "uvloop"
    assert run(_loop_name(), settings.event_loop) == "uvloop"


def test_event_loop_asyncio_turns_uvloop_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENT_LOOP", "asyncio")
    settings = Settings(_env_file=None)
    assert run(_loop_name(), settings.event_loop) == "asyncio"


async def test_the_suite_runs_on_the_shipped_loop() -> None:
    assert running_loop_name() == "uvloop"


async def test_the_loopback_guard_holds_on_uvloop() -> None:
    # uvloop connects in C, past the patched socket.connect: the test loop checks too.
    with pytest.raises(ConnectionRefusedError, match="only loopback"):
        await asyncio.open_connection("192.0.2.1", 80)
