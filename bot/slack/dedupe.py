"""In-process duplicate filter for Slack deliveries (the durable one is `db.deliveries`)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

from agents.metrics import REGISTRY

# The bot owns this metric (the runtime knows nothing of deliveries); both dedupe layers,
# this one and the database's, count into it.
REGISTRY.describe(
    "support_bot_duplicate_deliveries_total", "counter", "Slack deliveries dropped as dupes"
)


class RecentKeys:
    """Remembers the last `capacity` keys; `first(key)` is True only the first time.

    Slack redelivers an event with the same `event_id` when an ack is late
    (`X-Slack-Retry-Num`), and a channel message that mentions the bot arrives twice,
    as `app_mention` and as `message`, with different event ids but the same
    (channel, ts) (bolt-python #941). Callers check both keys.
    """

    def __init__(self, capacity: int = 20_000) -> None:
        self._capacity = capacity
        self._keys: OrderedDict[Hashable, None] = OrderedDict()

    def first(self, key: Hashable) -> bool:
        if key in self._keys:
            self._keys.move_to_end(key)
            return False
        self._keys[key] = None
        if len(self._keys) > self._capacity:
            self._keys.popitem(last=False)
        return True

    def forget(self, key: Hashable) -> None:
        """Drop `key`, so that a redelivery of it is taken again."""
        self._keys.pop(key, None)

    def __len__(self) -> int:
        return len(self._keys)


class DeliveryFilter:
    """Drops a delivery seen before: an event by event id or by (channel, ts), a
    command or interaction by trigger id."""

    def __init__(self, capacity: int = 20_000) -> None:
        self._events = RecentKeys(capacity)
        self._messages = RecentKeys(capacity)
        self._requests = RecentKeys(capacity)

    def first_request(self, trigger_id: str) -> bool:
        """True the first time a command, shortcut or view submission (by its trigger
        id, unique per request) is seen; counts the duplicates it drops."""
        if self._requests.first(trigger_id):
            return True
        REGISTRY.inc("support_bot_duplicate_deliveries_total", layer="request")
        return False

    def first(self, *, event_id: str | None, channel: str, ts: str) -> bool:
        """True for a delivery not seen before; counts the duplicates it drops."""
        new_event = self._events.first(event_id) if event_id else True
        new_message = self._messages.first((channel, ts))
        if new_event and new_message:
            return True
        REGISTRY.inc("support_bot_duplicate_deliveries_total", layer="memory")
        return False

    def forget(self, *, event_id: str | None, channel: str, ts: str) -> None:
        """Undo `first` for a delivery that could not be taken on (Slack will retry it)."""
        if event_id:
            self._events.forget(event_id)
        self._messages.forget((channel, ts))
