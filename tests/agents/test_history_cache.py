"""`agents.history.ContentCache`: each event becomes a model message once, for as long as
it lives, and the message is the one `event_to_content` builds."""

from __future__ import annotations

import gc

from agents.events import Event, FunctionCall, Part
from agents.history import ContentCache, build_contents, event_to_content


def _history() -> list[Event]:
    call = FunctionCall(id="c1", name="lookup", args={"q": "invoice"})
    return [
        Event(id="e1", author="user", invocation_id="i1", parts=(Part(text="x" * 50),)),
        Event(id="e2", author="support", invocation_id="i1", parts=(Part(text="Let me see"),)),
        Event(id="e3", author="billing", invocation_id="i1", parts=(Part(function_call=call),)),
    ]


def test_content_cache_builds_the_same_messages_as_without_it() -> None:
    events = _history()
    cache = ContentCache()
    for agent in ("support", "billing", "support"):
        for limit in (None, 10):
            plain = build_contents(events, agent_name=agent, branch=None, max_message_chars=limit)
            assert plain == build_contents(
                events, agent_name=agent, branch=None, max_message_chars=limit, cache=cache
            )


def test_content_cache_converts_each_event_once_per_view() -> None:
    events = _history()
    cache = ContentCache()
    first = [cache.content(e, "support", None) for e in events]
    again = [cache.content(e, "support", None) for e in events]
    assert all(a is b for a, b in zip(first, again, strict=True))
    # Seen by another agent that wrote none of them, e1 and e3 read the same.
    other = [cache.content(e, "triage", None) for e in events]
    assert other[0] is first[0] and other[2] is first[2]
    assert other[1] == event_to_content(events[1], "triage")
    assert other[1] != first[1]  # support's own turn is context for triage


def test_content_cache_forgets_events_that_are_gone() -> None:
    cache = ContentCache()
    events = _history()
    for event in events:
        cache.content(event, "support", None)
    assert len(cache) == 3
    del events, event
    gc.collect()
    assert len(cache) == 0
