"""The event loop: the standard library's by default, uvloop with `EVENT_LOOP=uvloop`,
for `support-bot` and for this suite alike."""

from __future__ import annotations

import asyncio

import pytest

from bot.config import Settings
from bot.event_loop import run, running_loop_name
from tests.conftest import _guarded_uvloop


async def _loop_name() -> str:
    return running_loop_name()


async def _loop_type() -> type:
    return type(asyncio.get_running_loop())


def _stock_loop_type() -> type:
    """The class of the loop asyncio's default policy makes."""
    loop = asyncio.new_event_loop()
    loop.close()
    return type(loop)


def test_the_bot_runs_on_asyncio_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVENT_LOOP", raising=False)
    settings = Settings(_env_file=None)
    assert settings.event_loop == "asyncio"
    assert run(_loop_name(), settings.event_loop) == "asyncio"
    # The standard library's own loop, as `asyncio.run` makes it.
    assert run(_loop_type(), settings.event_loop) is _stock_loop_type()


def test_event_loop_uvloop_runs_the_bot_on_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENT_LOOP", "uvloop")
    settings = Settings(_env_file=None)
    assert run(_loop_name(), settings.event_loop) == "uvloop"


async def test_the_suite_runs_on_the_shipped_loop() -> None:
    import os

    assert running_loop_name() == (os.environ.get("EVENT_LOOP") or "asyncio")
    if running_loop_name() == "asyncio":
        assert type(asyncio.get_running_loop()) is _stock_loop_type()


def test_the_loopback_guard_holds_on_uvloop() -> None:
    # uvloop connects in C, past the patched socket.connect: the suite's uvloop checks too.
    factory = _guarded_uvloop()
    assert factory is not None
    loop = factory()
    try:
        with pytest.raises(ConnectionRefusedError, match="only loopback"):
            loop.run_until_complete(asyncio.open_connection("192.0.2.1", 80))
    finally:
        loop.close()
