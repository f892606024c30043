"""Cutting a thread into summary windows: the compaction cadence, the open tail, stored
windows kept while their events are unchanged and rebuilt when they change."""

from __future__ import annotations

from agents.events import (
    CompactionInfo,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    Part,
)
from agents.summary.demands import crowded, holds_values
from agents.summary.entities import EntityExtractor
from agents.summary.windows import StoredWindow, fingerprint, invocations, plan_windows, span_of


def turn(number: int, first_seq: int, *, call: bool = False) -> list[Event]:
    """One invocation: the user's message and the reply (with a tool call before it)."""
    inv = f"inv{number}"
    events = [Event(author="user", invocation_id=inv, parts=(Part(text=f"question {number}"),))]
    if call:
        fc = FunctionCall(name="lookup", args={})
        events += [
            Event(author="agent", invocation_id=inv, parts=(Part(function_call=fc),)),
            Event(
                author="agent",
                invocation_id=inv,
                parts=(Part(function_response=FunctionResponse(id=fc.id, name="lookup")),),
            ),
        ]
    events.append(Event(author="agent", invocation_id=inv, parts=(Part(text=f"answer {number}"),)))
    return [e.model_copy(update={"id": f"e{first_seq + i}"}) for i, e in enumerate(events)]


def thread(turns: int) -> list[Event]:
    events: list[Event] = []
    for number in range(1, turns + 1):
        events += turn(number, len(events) + 1)
    return events


def stored(events: list[Event]) -> StoredWindow:
    return StoredWindow(span=span_of(events), status="passed", record={"goal": "g"})


def test_windows_close_every_interval_invocations_and_the_rest_is_an_open_tail() -> None:
    plan = plan_windows(thread(7), [], interval=3)
    assert [(s.start_id, s.end_id, s.closed) for s in plan.todo] == [
        ("e1", "e6", True),
        ("e7", "e12", True),
        ("e13", "e14", False),
    ]


def test_compaction_events_are_not_summarised_and_unfinished_invocations_wait() -> None:
    events = thread(4)
    info = CompactionInfo(start_event_id="e1", end_event_id="e6", summary="earlier turns")
    compaction = Event(
        author="compaction",
        id="e15",
        invocation_id="inv3",
        actions=EventActions(compaction=info),
    )
    plan = plan_windows([*events, compaction], [], interval=3, completed_through="inv2")
    assert [(s.start_id, s.end_id, s.closed) for s in plan.todo] == [("e1", "e4", False)]
    plan = plan_windows([*events, compaction], [], interval=3, completed_through="inv3")
    assert [(s.start_id, s.end_id) for s in plan.todo] == [("e1", "e6")]


def test_a_stored_window_is_kept_and_only_what_follows_it_is_planned() -> None:
    events = thread(5)
    first = stored(events[:6])
    plan = plan_windows(events, [first], interval=3)
    assert plan.kept == [first]
    assert [(s.start_id, s.end_id, s.closed) for s in plan.todo] == [("e7", "e10", False)]


def test_a_window_whose_events_changed_is_rebuilt_from_the_events_left() -> None:
    events = thread(9)
    windows = [stored(events[0:6]), stored(events[6:12]), stored(events[12:18])]
    forgotten = [e for e in events if e.invocation_id != "inv5"]  # deleted by `forget`
    plan = plan_windows(forgotten, windows, interval=3)
    assert plan.kept == [windows[0], windows[2]]
    [rebuilt] = plan.todo
    assert (rebuilt.start_id, rebuilt.end_id, rebuilt.closed) == ("e7", "e12", True)
    assert rebuilt.fingerprint == fingerprint(
        [e for e in events[6:12] if e.invocation_id != "inv5"]
    )


def test_imported_transcripts_without_invocation_ids_group_at_user_messages() -> None:
    events = [e.model_copy(update={"invocation_id": ""}) for e in thread(2)]
    assert [[e.id for e in group] for group in invocations(events)] == [["e1", "e2"], ["e3", "e4"]]


def test_a_window_never_ends_between_a_call_and_its_response() -> None:
    events = turn(1, 1) + turn(2, 3, call=True)
    # The call's response arrives in the next invocation (a tool that answered late).
    call, response, reply = events[3], events[4], events[5]
    late = [
        *events[:4],
        *(e.model_copy(update={"invocation_id": "inv3"}) for e in (response, reply)),
    ]
    plan = plan_windows(late, [], interval=2)
    assert call.id == "e4"
    # Two invocations are done at e4, but e4's call waits: the window closes at e6.
    assert [(s.start_id, s.end_id, s.closed) for s in plan.todo] == [("e1", "e6", True)]


def valued(events: list[Event]) -> bool:
    """A stand-in for `holds_values`: an event that says "A-" holds a value."""
    return any("A-" in e.text for e in events)


def test_a_window_without_a_value_stays_open_until_an_invocation_brings_one() -> None:
    events = thread(6)
    events[7] = events[7].model_copy(update={"parts": (Part(text="order A-1004"),)})  # inv4
    plan = plan_windows(events, [], interval=2, holds_values=valued)
    # inv1-inv3 hold nothing: the first window waits for inv4's value (bound: 4).
    assert [(s.start_id, s.end_id, s.closed, s.holds_values) for s in plan.todo] == [
        ("e1", "e8", True, True),
        ("e9", "e12", False, False),
    ]


def test_a_window_without_a_value_closes_at_the_bound() -> None:
    plan = plan_windows(thread(7), [], interval=2, holds_values=valued, max_invocations=3)
    assert [(s.start_id, s.end_id, s.closed, s.holds_values) for s in plan.todo] == [
        ("e1", "e6", True, False),
        ("e7", "e12", True, False),
        ("e13", "e14", False, False),
    ]


def test_the_cut_is_the_same_live_and_at_the_digest() -> None:
    events = thread(8)
    for index in (5, 13):  # inv3 and inv7 answer with a value
        events[index] = events[index].model_copy(update={"parts": (Part(text="A-1"),)})
    at_digest = plan_windows(events, [], interval=2, holds_values=valued)
    kept: list[StoredWindow] = []
    for number in range(1, 9):
        live = plan_windows(
            events, kept, interval=2, holds_values=valued, completed_through=f"inv{number}"
        )
        kept += [
            StoredWindow(span=s, status="passed", record={"goal": "g"})
            for s in live.todo
            if s.closed
        ]
    assert [w.span for w in kept] == [s for s in at_digest.todo if s.closed]
    assert [(s.start_id, s.end_id) for s in at_digest.todo] == [
        ("e1", "e6"),
        ("e7", "e14"),
        ("e15", "e16"),
    ]


def test_a_window_crowded_with_values_closes_before_the_interval() -> None:
    events = thread(5)
    orders = "Orders A-1001, A-1002, A-1003, A-1004, A-1005 and A-1006 were charged twice."
    events[1] = events[1].model_copy(update={"parts": (Part(text=orders),)})  # inv1's reply
    extractor = EntityExtractor()
    plan = plan_windows(
        events,
        [],
        interval=3,
        holds_values=lambda run: holds_values(run, extractor),
        crowded=lambda run: crowded(run, extractor),
    )
    # inv1 alone demands six values: its own window, so one bad item costs only it.
    assert [(s.start_id, s.end_id, s.closed) for s in plan.todo] == [
        ("e1", "e2", True),
        ("e3", "e10", False),
    ]
    assert not crowded(events[2:], extractor)


def test_one_invocation_crowded_with_values_is_cut_inside_never_between_call_and_response() -> None:
    # inv1: the user names five orders, the lookup's call a sixth, the reply two of them.
    events = turn(1, 1, call=True) + thread(3)[2:]
    events = [e.model_copy(update={"id": f"e{i}"}) for i, e in enumerate(events, start=1)]
    asked = "Orders A-1001, A-1002, A-1003, A-1004 and A-1005 were charged twice."
    call = events[1].function_calls[0].model_copy(update={"args": {"order_id": "A-1006"}})
    events[0] = events[0].model_copy(update={"parts": (Part(text=asked),)})
    events[1] = events[1].model_copy(update={"parts": (Part(function_call=call),)})
    events[3] = events[3].model_copy(update={"parts": (Part(text="Refunding A-1001 and A-1006."),)})
    extractor = EntityExtractor()
    plan = plan_windows(
        events,
        [],
        interval=3,
        holds_values=lambda run: holds_values(run, extractor),
        crowded=lambda run: crowded(run, extractor),
    )
    # The call makes six values, but waits for its response: the cut is after e3, inside
    # inv1; the reply starts the next window, which closes with inv3 (three invocations).
    assert [(s.start_id, s.end_id, s.closed) for s in plan.todo] == [
        ("e1", "e3", True),
        ("e4", "e8", True),
    ]
    assert crowded(events[:2], extractor)
