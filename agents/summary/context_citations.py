"""Citations of the quoted context instead of an event: a window's record citing the
fenced thread goal it was shown (`[THREAD_GOAL]`) rather than any of its events.

Measured on the embedded model: a window shown the earlier goal in a block fenced as
`THREAD_GOAL` wrote the goal again as a fact and an open question citing
`THREAD_GOAL`, and failed both attempts on "cites THREAD_GOAL, which is not in the
transcript". Such a source names no event, so it is no citation: it is removed, and an
item citing nothing else only restates the context (the merge keeps the thread's goal
itself) and is dropped. Nothing is added or reworded, and an item citing a real event
keeps it; the validator then checks what is left as usual.
"""

from __future__ import annotations

from collections.abc import Collection

from agents.summary.record import SECTIONS, HandoffRecord


def without_context_citations(record: HandoffRecord, marks: Collection[str]) -> HandoffRecord:
    """`record` without sources naming a context block in `marks`, and without items
    that cited only such blocks."""
    if not marks:
        return record
    updates = {}
    for section in SECTIONS:
        items = []
        for item in getattr(record, section):
            sources = [s for s in item.sources if s not in marks]
            if len(sources) == len(item.sources):
                items.append(item)
            elif sources:
                items.append(item.model_copy(update={"sources": sources}))
        updates[section] = items
    return record.model_copy(update=updates)
