"""A fake Slack Socket Mode server: a local WebSocket that plays Slack's envelopes.

    async with FakeSocketModeServer() as ws:
        api = FakeSlackApi(socket_url=ws.url)   # apps.connections.open answers ws.url
        ...
        await ws.wait_connected()
        envelope_id = await ws.send_event(body)  # an events_api envelope
        await ws.wait_acked(envelope_id)

On connect it sends `hello`; `acks` records every envelope id the client acked.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from aiohttp import WSMsgType, web


class FakeSocketModeServer:
    """Serves one Socket Mode WebSocket at `url` on 127.0.0.1."""

    def __init__(self) -> None:
        self.acks: list[dict[str, Any]] = []
        self._sockets: list[web.WebSocketResponse] = []
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/link"

    async def __aenter__(self) -> FakeSocketModeServer:
        app = web.Application()
        app.router.add_get("/link", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for ws in self._sockets:
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.append(ws)
        hello = {
            "type": "hello",
            "num_connections": 1,
            "connection_info": {"app_id": "A1"},
            "debug_info": {"host": "fake", "approximate_connection_time": 3600},
        }
        await ws.send_str(json.dumps(hello))
        await self._notify()
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                self.acks.append(json.loads(msg.data))
                await self._notify()
        return ws

    async def wait_connected(self, within: float = 10.0) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: bool(self._sockets)), within)

    async def send_event(self, body: dict[str, Any], *, retry_attempt: int = 0) -> str:
        """Push an `events_api` envelope carrying `body`; returns its envelope id."""
        envelope_id = uuid.uuid4().hex
        envelope = {
            "envelope_id": envelope_id,
            "type": "events_api",
            "payload": body,
            "accepts_response_payload": False,
            "retry_attempt": retry_attempt,
            "retry_reason": "",
        }
        await self._sockets[-1].send_str(json.dumps(envelope))
        return envelope_id

    async def wait_acked(self, envelope_id: str, within: float = 10.0) -> None:
        def acked() -> bool:
            return any(a.get("envelope_id") == envelope_id for a in self.acks)

        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(acked), within)
