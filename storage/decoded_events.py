"""Stored events already decoded, shared between the loads of a session.

Every turn loads its session's window (the events since the last compaction) and, before
this, decoded every row of it from JSON into a new `Event` (`Event.model_validate_json`):
about 4 % of the bot's CPU under `bench/slack_load.py`, for events that had not changed
since the thread's last turn. Those fresh objects (eleven tracked containers an event:
the model, its parts, actions and usage, their dicts and field sets) also made up about
half of what the garbage collector's young generation walked while the turns waited for the
model, and the runtime's `agents.history.ContentCache`, keyed by event identity, rebuilt
every event's message again because no event outlived its turn.

`DecodedEvents` maps a row's stored JSON text to the `Event` decoded from it. The key is
the text itself, not the row id, so a hit is exact by construction: a row rewritten in
place (a reply stamped with its Slack message) has new text and is decoded again, and no
write needs to tell the cache anything. Events are frozen and never mutated in place, so
the sessions loaded at the same time can share them.

The map is bounded (`capacity` events, oldest entry out first; a hit does not refresh
an entry, which keeps a hit to one dict lookup). An event of a support thread takes about
4 KB decoded and its text another 0.6 KB (measured with tracemalloc on reply-sized
events), so the default bound, 10,000 events, holds at most about 50 MB: the windows of
the last few hundred active threads. `append_event` remembers each event it stores, so a
thread's next turn decodes nothing it wrote itself. `clear` drops everything, for
`Database.forget_user`: a forgotten user's words are not kept in this process's memory
either (another process's map, never asked for them again, drops them as it fills).
"""

from __future__ import annotations

from agents.events import Event

DEFAULT_CAPACITY = 10_000


class DecodedEvents:
    """A bounded map from an event's stored JSON to the `Event` decoded from it."""

    __slots__ = ("_capacity", "_events")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._events: dict[str, Event] = {}

    def decode(self, data: str) -> Event:
        """The event `data` encodes: the one decoded before when the text is the same,
        else decoded now (raising as `Event.model_validate_json` does) and kept."""
        event = self._events.get(data)
        if event is None:
            event = Event.model_validate_json(data)
            self.remember(data, event)
        return event

    def remember(self, data: str, event: Event) -> None:
        """Keep `event` as what `data` decodes to: the event just stored as `data`, so the
        next load of its session shares it instead of decoding it."""
        if self._capacity > 0 and data not in self._events:
            if len(self._events) >= self._capacity:
                del self._events[next(iter(self._events))]
            self._events[data] = event

    def clear(self) -> None:
        self._events.clear()

    def __len__(self) -> int:
        return len(self._events)
