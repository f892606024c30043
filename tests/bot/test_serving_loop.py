"""The serving loop: Slack's requests go ahead of a busy pass, everything else keeps
asyncio's order, and a request's own connections and tasks still work."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web

from bot.serving_loop import ServingLoop, serve_site_first

BUSY_CALLBACKS = 40
BUSY_EACH_S = 0.004


class Busy:
    """A loop kept busy as by replies in flight: `BUSY_CALLBACKS` callbacks of
    `BUSY_EACH_S` of CPU each, every one scheduling itself again, until stopped."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.runs = 0
        self.stopped = False

    def start(self) -> None:
        for _ in range(BUSY_CALLBACKS):
            self.loop.call_soon(self._work)

    def _work(self) -> None:
        if self.stopped:
            return
        time.sleep(BUSY_EACH_S)  # CPU a reply takes, without yielding
        self.runs += 1
        self.loop.call_soon(self._work)


async def serve(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]], *, first: bool
) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/slack/events", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    if first:
        serve_site_first(site)  # a no-op on asyncio's own loop
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/slack/events"


def post(url: str) -> None:
    """POST to `url`, blocking: run on a thread of its own, as Slack sends from outside
    the process."""
    with urllib.request.urlopen(urllib.request.Request(url, data=b"{}"), timeout=30) as r:
        assert r.status == 200


def busy_runs_before_the_handler(loop_factory: Callable[[], asyncio.AbstractEventLoop]) -> int:
    """How many busy callbacks ran between a request's arrival and its handler."""

    async def main() -> int:
        busy = Busy(asyncio.get_running_loop())
        seen: dict[str, int] = {}

        async def handler(request: web.Request) -> web.Response:
            seen["handler"] = busy.runs
            return web.Response(text="ok")

        runner, url = await serve(handler, first=True)
        try:
            busy.start()
            await asyncio.sleep(0.1)  # the loop is busy now

            def send() -> None:
                # Counted from the moment the request leaves, not from the thread's start.
                seen["sent"] = busy.runs
                post(url)

            await asyncio.to_thread(send)
            return seen["handler"] - seen["sent"]
        finally:
            busy.stopped = True
            await runner.cleanup()

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(main())


def test_serve_site_first_registers_only_with_the_serving_loop() -> None:
    async def registered() -> bool:
        runner, _url = await serve(lambda request: asyncio.sleep(0), first=False)
        try:
            return serve_site_first(next(iter(runner.sites)))
        finally:
            await runner.cleanup()

    with asyncio.Runner(loop_factory=ServingLoop) as runner:
        assert runner.run(registered())
    with asyncio.Runner(loop_factory=asyncio.SelectorEventLoop) as runner:
        assert not runner.run(registered())


def test_a_request_is_served_ahead_of_a_busy_pass() -> None:
    # On asyncio's loop the request waits for the rest of the pass it arrived in, then
    # for the whole next one; the serving loop polls between callbacks and runs it next.
    assert busy_runs_before_the_handler(ServingLoop) <= 3
    assert busy_runs_before_the_handler(asyncio.SelectorEventLoop) >= BUSY_CALLBACKS


def test_a_task_the_request_starts_waits_its_turn() -> None:
    async def main() -> tuple[int, int]:
        busy = Busy(asyncio.get_running_loop())
        seen: dict[str, int] = {}
        tasks: set[asyncio.Task[None]] = set()

        async def reply() -> None:
            seen["reply"] = busy.runs

        async def handler(request: web.Request) -> web.Response:
            seen["handler"] = busy.runs
            task = asyncio.create_task(reply())  # a reply's work, not the ack's
            tasks.add(task)
            return web.Response(text="ok")

        runner, url = await serve(handler, first=True)
        try:
            busy.start()
            await asyncio.sleep(0.1)
            await asyncio.to_thread(post, url)
            await asyncio.gather(*tasks)
            return seen["handler"], seen["reply"]
        finally:
            busy.stopped = True
            await runner.cleanup()

    with asyncio.Runner(loop_factory=ServingLoop) as runner:
        handler, reply = runner.run(main())
    assert reply - handler >= BUSY_CALLBACKS // 2  # behind the busy callbacks queued before


def test_a_request_that_connects_elsewhere_leaves_the_loop_idle() -> None:
    # A request's task may open connections of its own (a Slack call before the ack):
    # asyncio removes a connecting socket's writer in a callback scheduled before the
    # task's wake-up, so the wake-up must not jump it (it did once: the loop then spun on
    # the stale writer at a core's worth of CPU).
    async def main() -> float:
        async def upstream(request: web.Request) -> web.Response:
            return web.Response(text="up")

        up_runner, up_url = await serve(upstream, first=False)
        connector = aiohttp.TCPConnector(force_close=True)  # a new connection per call
        client = aiohttp.ClientSession(connector=connector)

        async def handler(request: web.Request) -> web.Response:
            async with client.post(up_url) as response:
                return web.Response(text=await response.text())

        runner, url = await serve(handler, first=True)
        try:
            for _ in range(10):
                await asyncio.to_thread(post, url)
            await asyncio.sleep(0.05)
            started = time.process_time()
            await asyncio.sleep(0.5)
            return time.process_time() - started
        finally:
            await client.close()
            await runner.cleanup()
            await up_runner.cleanup()

    with asyncio.Runner(loop_factory=ServingLoop) as runner:
        idle_cpu = runner.run(main())
    assert idle_cpu < 0.1


def test_other_callbacks_keep_asyncios_order() -> None:
    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        order: list[Any] = []
        runner, _url = await serve(lambda request: asyncio.sleep(0), first=True)
        try:
            done = loop.create_future()
            for i in range(50):
                loop.call_soon(order.append, i)
            loop.call_later(0, order.append, "timer")
            loop.call_soon(lambda: done.set_result(None))
            await done
            await asyncio.sleep(0.01)
            return order
        finally:
            await runner.cleanup()

    with asyncio.Runner(loop_factory=ServingLoop) as runner:
        order = runner.run(main())
    assert order[:50] == list(range(50))
    assert order[50:] == ["timer"]


def test_without_a_registered_server_it_is_asyncios_loop() -> None:
    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        order: list[int] = []
        for i in range(20):
            loop.call_soon(order.append, i)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return order

    with asyncio.Runner(loop_factory=ServingLoop) as runner:
        assert runner.run(main()) == list(range(20))
