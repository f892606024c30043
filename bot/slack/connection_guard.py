"""The web server's connections, bounded: how many one process holds, and how long one
may take to send a request.

aiohttp keeps a connection that never completes its request for as long as its
keep-alive allows, and takes as many as arrive, so one client holding half-sent
requests could use up the process's file descriptors, and with them Slack's signed
requests and the bot's own Web API calls. `ConnectionGuard` wraps aiohttp's protocol
factory (`web.Server`, a documented `create_server` protocol factory) and so sees every
connection from the moment it is accepted:

- A connection has `request_timeout` seconds, from when it opens or its last response
  is handed to aiohttp, to deliver a whole request, headers and body; otherwise it is
  closed. This covers idle keep-alive, slow headers and slow bodies alike. A connection
  whose last request succeeded (Slack's) may idle for `keepalive_timeout` instead: a
  client that keeps connections longer than the server would otherwise lose requests
  sent on one the server had just closed.
- At most `max_per_peer` are held from one peer (an IPv4 address, or an IPv6 /64, which
  one host can fill with addresses). One more from that peer closes that peer's own
  connection without a request in hand (the one still sending headers, then one whose
  headers are in; the one quiet longest), or is refused when it has none: never anyone
  else's. A client flooding the port from its own address churns only its own
  connections, so Slack's, from other addresses, are never closed to make room for it,
  however fast the flood reconnects. A per-peer cap at or above `max_connections` leaves
  only that cap (every connection from one proxy, say).
- At most `max_connections` are held. One more arriving closes a connection without a
  request in hand: first those still sending their request's headers, then those whose
  headers are in, then those whose last request succeeded (Slack's keep-alive
  connections, which junk and half-sent requests never earn); within each, the one
  quiet longest. So a flood of new connections closes its own kind before a request
  that has arrived but waits for a busy event loop to read it. When every connection is
  serving a request, the newcomer is closed instead. Requests being served are never
  cut. With the per-peer cap this takes several flooding addresses; many of them, or one
  address shared with Slack's (a proxy's, say), are a reverse proxy's job
  (docs/http-mode.md).

A request counts as in hand once `middleware` has read its body (bounded by the app's
`client_max_size`), so a body trickled in byte by byte is still on the clock.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import cast

from aiohttp import web

from agents.metrics import REGISTRY

log = logging.getLogger(__name__)

REGISTRY.describe(
    "support_bot_http_connections_closed_total",
    "counter",
    "Web server connections the guard closed, by reason: timeout, evicted (for a newcomer), "
    "refused (a newcomer, every connection busy), peer_cap (a newcomer whose address is at "
    "its share with none of its own to close)",
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class _Connection:
    transport: asyncio.Transport
    peer: str
    busy: bool = False
    proven: bool = False  # its last response was a success
    headed: bool = False  # the end of its current request's headers has arrived
    tail: bytes = b""  # the last bytes received, for a header end split across reads
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)


class ConnectionGuard:
    """Caps and times the connections of the listeners it serves (see the module)."""

    def __init__(
        self,
        *,
        max_connections: int,
        max_per_peer: int,
        request_timeout: float,
        keepalive_timeout: float,
    ) -> None:
        if min(max_connections, max_per_peer) < 1 or min(request_timeout, keepalive_timeout) <= 0:
            raise ValueError("max_connections and max_per_peer must be >= 1, the timeouts > 0")
        self.max_connections = max_connections
        self.max_per_peer = max_per_peer
        self.request_timeout = request_timeout
        self.keepalive_timeout = keepalive_timeout
        self._open: dict[asyncio.BaseTransport, _Connection] = {}
        self._per_peer: Counter[str] = Counter()
        # The connections without a request in hand, by tier (`_tier`: the order they
        # are closed in for room); insertion order is the order of their last activity
        # (opened, answered, bytes received), so each tier's first has been quiet longest.
        self._quiet: tuple[dict[asyncio.BaseTransport, _Connection], ...] = ({}, {}, {})
        # The same, per peer, for tiers 0 and 1 (those a peer's newcomer may close).
        self._quiet_of: dict[str, tuple[dict[asyncio.BaseTransport, _Connection], ...]] = {}

    @property
    def open_connections(self) -> int:
        """Connections held now."""
        return len(self._open)

    async def listen(self, factory: web.Server, host: str, port: int) -> asyncio.Server:
        """Listen on `host:port`, serving each admitted connection with `factory`."""
        loop = asyncio.get_running_loop()
        return await loop.create_server(
            lambda: _GuardedProtocol(self, factory), host, port, reuse_address=True
        )

    def close_all(self) -> None:
        """Close every connection still held (after the server has shut down)."""
        for connection in list(self._open.values()):
            connection.transport.abort()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Mark the request's connection busy once its body is in, and waiting again
        once the response is handed back."""
        await request.read()
        connection = self._open.get(request.transport) if request.transport else None
        if connection is not None:
            self._busy(connection)
        response: web.StreamResponse | None = None
        try:
            response = await handler(request)
            return response
        finally:
            if connection is not None and connection.transport in self._open:
                connection.proven = response is not None and response.status < 400
                self._waiting(connection)

    def admit(self, transport: asyncio.Transport) -> bool:
        """Hold `transport`, closing a longest-waiting connection when its peer or the
        whole process is at its cap (see the module); False (close the newcomer) when
        there is none to close."""
        peer = peer_of(transport.get_extra_info("peername"))
        # A peer at its cap closes only its own: its flood must not churn anyone else's
        # connections. (A per-peer cap at or above the total never applies.)
        if self.max_per_peer <= self._per_peer[peer] < self.max_connections:
            queues = self._quiet_of.get(peer, ())
            if not self._evict(next((c for q in queues for c in q.values()), None), "peer_cap"):
                return False
        elif len(self._open) >= self.max_connections:
            if not self._evict(next((c for q in self._quiet for c in q.values()), None)):
                return False
        connection = _Connection(transport, peer)
        self._open[transport] = connection
        self._per_peer[peer] += 1
        self._waiting(connection)
        return True

    def _evict(self, idle: _Connection | None, refusal: str = "refused") -> bool:
        """Close `idle` to make room; False (counted as `refusal`) when there is none."""
        if idle is None:
            _closed(refusal)
            return False
        _closed("evicted")
        self._drop(idle)
        idle.transport.close()
        return True

    def release(self, transport: asyncio.BaseTransport) -> None:
        """Forget `transport`, which has closed."""
        connection = self._open.get(transport)
        if connection is not None:
            self._drop(connection)

    def received(self, transport: asyncio.BaseTransport, data: bytes) -> None:
        """Note `data` from `transport`: it moves to the end of its tier, and to the
        next tier once its request's headers are in. Its timeout still runs from when
        it opened or was last answered."""
        connection = self._open.get(transport)
        if connection is None or connection.busy:
            return
        if not connection.headed and not connection.proven:
            connection.headed = b"\r\n\r\n" in connection.tail + data
            connection.tail = data[-3:]
        self._unqueue(connection)
        self._enqueue(connection)

    def _busy(self, connection: _Connection) -> None:
        connection.busy = True
        self._unqueue(connection)
        if connection.timer is not None:
            connection.timer.cancel()
            connection.timer = None

    def _waiting(self, connection: _Connection) -> None:
        connection.busy = False
        if connection.timer is not None:
            connection.timer.cancel()
        connection.headed, connection.tail = False, b""
        self._unqueue(connection)
        self._enqueue(connection)
        loop = asyncio.get_running_loop()
        timeout = self.keepalive_timeout if connection.proven else self.request_timeout
        connection.timer = loop.call_later(timeout, self._expire, connection)

    def _expire(self, connection: _Connection) -> None:
        connection.timer = None
        if connection.busy or connection.transport not in self._open:
            return
        _closed("timeout")
        self._drop(connection)
        connection.transport.abort()

    def _drop(self, connection: _Connection) -> None:
        if connection.timer is not None:
            connection.timer.cancel()
            connection.timer = None
        if self._open.pop(connection.transport, None) is not None:
            self._per_peer[connection.peer] -= 1
            if not self._per_peer[connection.peer]:
                del self._per_peer[connection.peer]
        self._unqueue(connection)

    def _enqueue(self, connection: _Connection) -> None:
        """Put `connection` last (quiet shortest) in its tier, its peer's too."""
        tier = _tier(connection)
        self._quiet[tier][connection.transport] = connection
        if tier < 2:
            self._quiet_of.setdefault(connection.peer, ({}, {}))[tier][connection.transport] = (
                connection
            )

    def _unqueue(self, connection: _Connection) -> None:
        for queue in self._quiet:
            queue.pop(connection.transport, None)
        own = self._quiet_of.get(connection.peer)
        if own is not None:
            for queue in own:
                queue.pop(connection.transport, None)
            if not any(own):
                del self._quiet_of[connection.peer]


def peer_of(peername: object) -> str:
    """The peer a connection counts against: its IPv4 address (an IPv4-mapped IPv6 one
    too), or its IPv6 address's /64; "" when the transport has no IP peer."""
    if not isinstance(peername, tuple) or not peername:
        return ""
    try:
        address = ipaddress.ip_address(str(peername[0]).split("%", 1)[0])
    except ValueError:
        return ""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def _tier(connection: _Connection) -> int:
    """0: sending headers, 1: headers in, 2: its last request succeeded."""
    return 2 if connection.proven else int(connection.headed)


def _closed(reason: str) -> None:
    REGISTRY.inc("support_bot_http_connections_closed_total", reason=reason)


class _GuardedProtocol(asyncio.Protocol):
    """aiohttp's protocol for one connection, created once the guard has admitted it and
    its first bytes arrive: a connection that never sends any costs no request handler."""

    def __init__(self, guard: ConnectionGuard, factory: web.Server) -> None:
        self._guard = guard
        self._factory = factory
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's does not subclass asyncio.Transport).
        transport = cast(asyncio.Transport, transport)
        if not self._guard.admit(transport):
            transport.abort()
            return
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        if self._transport is None or self._transport.is_closing():
            return
        self._guard.received(self._transport, data)
        if self._inner is None:
            self._inner = self._factory()
            self._inner.connection_made(self._transport)
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        # Before any request, end of input ends the connection.
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._transport is not None:
            self._guard.release(self._transport)
        if self._inner is not None:
            self._inner.connection_lost(exc)
