"""asyncio's selector event loop, with the requests of the bot's own server run first.

Slack waits 3 s for each event's acknowledgement, and the bot acks once the message is
stored, about a millisecond of work. On asyncio's loop a request waits its turn: a pass
runs, in order, every callback that became ready while the last one ran, and a request
read in one pass is handled in the next. Near capacity a pass holds the replies in flight
(model answers, stream updates, database writes) and lasts 10 ms and more, longer after a
garbage collection: at 168 messages a second (`bench/slack_load.py`) ack p99 was 18-25 ms,
and 90 % of the acks over 10 ms came during a loop lag over 5 ms.

`ServingLoop` is asyncio's selector loop with one change of order. What `serve_first`
registers (listening sockets, the protocol of their connections, the coroutines of the
tasks that accept and serve them) runs first:
- a registered socket found readable goes to a queue of its own, run before the pass's
  other callbacks;
- so does every callback scheduled while one from that queue runs (the request's task
  woken by its data, a future's callbacks, a response's write), in the order scheduled,
  except the steps of tasks not registered: a reply's task a request starts waits its
  turn, and so does a registered task woken by anything else (a database lock another
  task let go, a connection opened), which keeps asyncio's order where asyncio relies on
  it (it removes a connecting socket's writer in a callback it schedules before the
  connecting task's wake-up);
- while a pass runs, the selector is polled without waiting once `POLL_S` has passed since
  the last poll, so a request that arrives in the middle of a long pass is read next, not
  after it. A socket polled readable is read again when the pass's own select reports it:
  the second read finds nothing, as asyncio's transports allow.

Everything else runs in asyncio's order and on its timers, and a loop with nothing
registered is asyncio's. What goes first is bounded by the requests Slack sends.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import selectors
import socket
import time
import weakref
from asyncio import base_events as _base_events
from asyncio import events, selector_events
from collections.abc import Callable, Iterable
from types import CodeType
from typing import Any

# A pass polls for requests at most this often (a poll is one `select` without waiting).
POLL_S = 0.001

# asyncio's own constants and helpers, which its typing stubs leave out.
base_events: Any = _base_events


class ServingLoop(asyncio.SelectorEventLoop):
    """A selector event loop that runs the callbacks of registered servers first."""

    def __init__(self, selector: selectors.BaseSelector | None = None) -> None:
        super().__init__(selector)
        # Listening sockets, held weakly: a closed one's descriptor may serve anything next.
        self._first_sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._first_protocols: tuple[type, ...] = ()
        self._first_code: frozenset[CodeType] = frozenset()
        self._serving_first = False
        # Callbacks that serve the registered servers, in the order they were scheduled.
        self._first_ready: collections.deque[asyncio.Handle] = collections.deque()

    def serve_first(
        self,
        *,
        sockets: Iterable[Any] = (),
        protocol: type | None = None,
        coroutines: Iterable[Callable[..., Any]] = (),
    ) -> None:
        """Run first: new connections on `sockets`, the callbacks of connections whose
        protocol is a `protocol`, and the steps of tasks running `coroutines`."""
        # asyncio's `Server.sockets` are `TransportSocket` views of the sockets it accepts on.
        self._first_sockets.update(getattr(s, "_sock", s) for s in sockets)
        if protocol is not None:
            self._first_protocols = (*self._first_protocols, protocol)
        self._first_code = self._first_code | {f.__code__ for f in coroutines}
        self._serving_first = True

    def _call_soon_first(self, callback: Any, *args: Any, context: Any = None) -> asyncio.Handle:
        """`call_soon` while a first callback runs (`_run_once` puts it in place for that
        callback alone, so every other callback schedules through asyncio's own): what
        it schedules goes first too, except the steps of other tasks (a reply's task that
        a request starts runs in its turn)."""
        if self._inherits(callback):
            loop: Any = self  # asyncio's own state, private to it
            loop._check_closed()
            handle = events.Handle(callback, args, self, context)
            self._first_ready.append(handle)
            return handle
        return asyncio.SelectorEventLoop.call_soon(self, callback, *args, context=context)

    def _inherits(self, callback: Any) -> bool:
        owner = getattr(callback, "__self__", None)
        if isinstance(owner, asyncio.Task):
            return getattr(owner.get_coro(), "cr_code", None) in self._first_code
        return True

    def _first_reader(self, key: selectors.SelectorKey) -> bool:
        """Whether a readable socket is a registered server's (a listening socket, or a
        connection whose transport carries a registered protocol)."""
        reader = key.data[0]
        if reader is None or reader._cancelled:
            return False
        args = reader._args  # a listening socket's: (protocol_factory, sock, ...)
        if len(args) > 1 and isinstance(args[1], socket.socket) and args[1] in self._first_sockets:
            return True
        transport = getattr(reader._callback, "__self__", None)
        return isinstance(getattr(transport, "_protocol", None), self._first_protocols)

    def _process_events(self, event_list: list[tuple[selectors.SelectorKey, int]]) -> None:
        base: Any = super()
        if not self._serving_first:
            base._process_events(event_list)
            return
        rest = []
        for key, mask in event_list:
            if mask & selectors.EVENT_READ and self._first_reader(key):
                self._first_ready.append(key.data[0])
                mask &= ~selectors.EVENT_READ
                if not mask:
                    continue
            rest.append((key, mask))
        base._process_events(rest)

    def _poll_first(self) -> None:
        """Queue the registered servers' readable sockets (the others wait for the pass's
        end: the selector reports them again, as it reports any socket still readable)."""
        loop: Any = self
        for key, mask in loop._selector.select(0):
            if mask & selectors.EVENT_READ and self._first_reader(key):
                self._first_ready.append(key.data[0])

    def _run_once(self) -> None:
        """asyncio's `BaseEventLoop._run_once`, running the registered servers'
        callbacks first and polling for their requests while a pass runs (see the
        module)."""
        base: Any = super()
        if not self._serving_first:
            base._run_once()
            return
        loop: Any = self  # asyncio's own state, private to it
        _drop_cancelled_timers(loop)
        first, ready, scheduled = self._first_ready, loop._ready, loop._scheduled
        timeout = None
        if first or ready or loop._stopping:
            timeout = 0
        elif scheduled:
            timeout = min(
                max(0, scheduled[0]._when - self.time()), base_events.MAXIMUM_SELECT_TIMEOUT
            )
        self._process_events(loop._selector.select(timeout))

        end_time = self.time() + loop._clock_resolution
        scheduled = loop._scheduled
        while scheduled:
            handle = scheduled[0]
            if handle._when >= end_time:
                break
            handle = heapq.heappop(scheduled)
            handle._scheduled = False
            ready.append(handle)

        todo = len(ready)  # as asyncio's: what a callback schedules runs next pass
        polled = time.perf_counter()
        while todo or first:
            swapped = bool(first)
            if swapped:
                handle = first.popleft()
                # Looked up on the loop, by asyncio's C tasks and futures too.
                loop.call_soon = self._call_soon_first
            else:
                handle, todo = ready.popleft(), todo - 1
            try:
                if handle._cancelled:
                    continue
                if loop._debug:
                    _run_debug(loop, handle)
                else:
                    handle._run()
            finally:
                if swapped:
                    del loop.call_soon
            now = time.perf_counter()
            if now - polled >= POLL_S:
                polled = now
                self._poll_first()
        handle = None  # as asyncio's: breaks a cycle when a callback raised


def _drop_cancelled_timers(loop: Any) -> None:
    """asyncio's clean-up of cancelled timers at the start of a pass."""
    scheduled = loop._scheduled
    count = len(scheduled)
    if (
        count > base_events._MIN_SCHEDULED_TIMER_HANDLES
        and loop._timer_cancelled_count / count > base_events._MIN_CANCELLED_TIMER_HANDLES_FRACTION
    ):
        kept = []
        for handle in scheduled:
            if handle._cancelled:
                handle._scheduled = False
            else:
                kept.append(handle)
        heapq.heapify(kept)
        loop._scheduled = kept
        loop._timer_cancelled_count = 0
    else:
        while scheduled and scheduled[0]._cancelled:
            loop._timer_cancelled_count -= 1
            handle = heapq.heappop(scheduled)
            handle._scheduled = False


def _run_debug(loop: Any, handle: Any) -> None:
    """Run `handle` as asyncio's debug mode does, warning when it was slow."""
    try:
        loop._current_handle = handle
        started = loop.time()
        handle._run()
        elapsed = loop.time() - started
        if elapsed >= loop.slow_callback_duration:
            base_events.logger.warning(
                "Executing %s took %.3f seconds", base_events._format_handle(handle), elapsed
            )
    finally:
        loop._current_handle = None


def serve_site_first(site: Any) -> bool:
    """Register an aiohttp `TCPSite` that has started with the running loop, when that is
    a `ServingLoop`: its listening sockets, its connections (aiohttp's `RequestHandler`)
    and the tasks that accept and serve them. False on any other loop (uvloop)."""
    loop = asyncio.get_running_loop()
    server = getattr(site, "_server", None)
    if not isinstance(loop, ServingLoop) or server is None:
        return False
    from aiohttp.web_protocol import RequestHandler

    coroutines: list[Any] = [RequestHandler.start, RequestHandler._handle_request]
    accept = getattr(selector_events.BaseSelectorEventLoop, "_accept_connection2", None)
    if accept is not None:
        coroutines.append(accept)
    loop.serve_first(sockets=server.sockets, protocol=RequestHandler, coroutines=coroutines)
    return True
