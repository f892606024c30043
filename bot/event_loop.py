"""The event loop the bot runs on: the standard library's own by default (asyncio's
default policy, as `asyncio.run` picks it), uvloop with `EVENT_LOOP=uvloop` (the `uvloop`
extra, Linux and macOS).

uvloop runs the same coroutines with libuv underneath. Under `bench/slack_load.py` it used
as much CPU per message as asyncio's loop (four pairs in the same minutes, median ratio
0.99) and gave no steadier ack latency, so it stays opt-in; the whole suite passes on it.
Every command runs its work through `run`, so `support-bot serve`, `socket`, `chat` and the
rest share the choice.
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
    """The loop constructor for `name`: None (asyncio's default, as `asyncio.run` uses)
    for `asyncio`, uvloop's for `uvloop` (None, with a warning, where it is missing)."""
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


def run(work: Coroutine[Any, Any, T], name: EventLoopName = "asyncio") -> T:
    """`asyncio.run(work)` on the loop `name` names."""
    with asyncio.Runner(loop_factory=loop_factory(name)) as runner:
        return runner.run(work)
