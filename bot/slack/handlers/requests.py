"""One request, acted on once: the trigger-id middleware in front of every listener.

Commands, shortcuts and view submissions carry a trigger id unique to the request: a
replayed (or redelivered) copy is acknowledged and dropped, by this process and,
through the database's deliveries, by every other one. Events have no trigger id and
pass through (`on_message` drops their duplicates by event id and message ts).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.response import BoltResponse

from agents.metrics import REGISTRY
from bot.slack.services import BotServices


class RequestOnce:
    """The middleware, with the process's and the database's record of requests."""

    def __init__(self, services: BotServices) -> None:
        self.services = services

    async def once_per_request(
        self, body: dict[str, Any], next: Callable[[], Awaitable[None]]
    ) -> BoltResponse | None:
        """Answer a request seen before with an empty 200; pass any other one on."""
        trigger = body.get("trigger_id") if isinstance(body, dict) else None
        if isinstance(trigger, str) and not await self.first_request(trigger):
            return BoltResponse(status=200, body="")
        await next()
        return None

    async def first_request(self, trigger: str) -> bool:
        """True the first time any process sees the request `trigger`."""
        if not self.services.deliveries.first_request(trigger):
            return False
        key = f"request:{trigger}"
        if await self.services.db.deliveries.first_delivery(key, now=time.time()):
            return True
        REGISTRY.inc("support_bot_duplicate_deliveries_total", layer="database")
        return False
