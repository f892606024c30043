"""Window records on each SQL backend: stored with their event range, listed in event
order, and a rebuilt window replaces the windows it overlaps."""

from __future__ import annotations

from agents.summary.windows import StoredWindow, WindowSpan
from storage import Database


def window(start: int, end: int, *, record: dict[str, object] | None = None) -> StoredWindow:
    span = WindowSpan(
        start_seq=start,
        end_seq=end,
        start_id=f"e{start}",
        end_id=f"e{end}",
        fingerprint=f"f{start}-{end}",
        closed=end < 20,
    )
    return StoredWindow(
        span=span,
        status="passed" if record is not None else "gap",
        record=record,
        problems=() if record is not None else ("dropped entity A-1001",),
        attempts=1 if record is not None else 2,
        first_attempt_pass=record is not None,
        prompt_tokens=100,
        completion_tokens=50,
        cost=0.001,
        latency_s=1.5,
        closed_by="compaction",
    )


async def test_windows_round_trip_in_event_order_and_replace_what_they_overlap(
    db: Database,
) -> None:
    record = {"goal": "refund", "facts": [{"text": "A-1001 paid", "sources": ["e2"]}]}
    await db.windows.save("s1", window(11, 20, record=record))
    await db.windows.save("s1", window(1, 10))
    await db.windows.save("s2", window(1, 4, record=record))
    assert await db.windows.windows("s1") == [window(1, 10), window(11, 20, record=record)]

    # Rebuilt after a deletion: the new range replaces the old one it overlaps.
    await db.windows.save("s1", window(1, 8, record=record))
    assert [w.span.end_seq for w in await db.windows.windows("s1")] == [8, 20]
    assert [w.span.start_seq for w in await db.windows.windows("s2")] == [1]
