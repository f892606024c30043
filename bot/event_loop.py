"""The event loop the bot runs on: uvloop by default where it is installed (Linux, macOS),
the standard library's with `EVENT_LOOP=asyncio`.

uvloop runs the same coroutines with libuv underneath; under `bench/slack_load.py` it took
a quarter of the bot's CPU per message (sockets, timers and callbacks in C). Every command
runs its work through `run`, so `support-bot serve`, `socket`, `chat` and the rest share it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar

EventLoopName = Literal["uvloop", "asyncio"]
LoopFactory = Callable[[], asyncio.AbstractEventLoop]
T = TypeVar("T")

log = logging.getLogger(__name__)


def uvloop_factory() -> LoopFactory | None:
    """uvloop's loop constructor, or None where uvloop is not installed (Windows)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def loop_factory(name: EventLoopName) -> LoopFactory | None:
    """The loop constructor for `name` (None: the standard library's default loop)."""
    if name == "asyncio":
        return None
    factory = uvloop_factory()
    if factory is None:
        log.warning("EVENT_LOOP=uvloop but uvloop is not installed: running on asyncio's loop")
    return factory


def running_loop_name() -> str:
    """`uvloop` or `asyncio`: what the running loop is (for logs and tests)."""
    loop = asyncio.get_running_loop()
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    return "uvloop" if isinstance(loop, uvloop.Loop) else "asyncio"


def run(work: Coroutine[Any, Any, T], name: EventLoopName = "uvloop") -> T:
    """`asyncio.run(work)` on the loop `name` names."""
    with asyncio.Runner(loop_factory=loop_factory(name)) as runner:
        return runner.run(work)
