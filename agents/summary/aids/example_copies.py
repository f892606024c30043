"""Items copied from the instruction's worked example, dropped before validation.

The summary instruction carries a worked example (`agents.summary.agent.EXAMPLE`) whose
values are unlike real ones (order Q-5512, $48.00, 2024-03-02, $6.99), so that a copied
item fails the relevance check. On the embedded model that is what happens on long
threads: a whole tau-bench airline thread's record carried the example's commitment
("A replacement for Q-5512 ... ships within two days", citing e4) and was rejected for it,
twice, and the thread got no summary. An item stating a value of the example that no
event of the transcript holds says nothing about this thread, so it is dropped and
counted; the completion pass then asks for, or quotes, whatever the record still misses.
The goal is never dropped: a goal copied from the example still fails validation.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.events import Event
from agents.summary.agent import EXAMPLE
from agents.summary.checks.coverage import event_content
from agents.summary.entities import EntityExtractor, as_entity, mentions
from agents.summary.record import SECTIONS, HandoffRecord


@dataclass(frozen=True)
class Uncopied:
    """The record without the items copied from the example, and how many were dropped."""

    record: HandoffRecord
    dropped: int


def _example_values(extractor: EntityExtractor) -> tuple[str, ...]:
    return tuple(sorted({value for _, value, _, _ in extractor.from_text(EXAMPLE)}))


def without_example_copies(
    record: HandoffRecord, events: list[Event], extractor: EntityExtractor
) -> Uncopied:
    """`record` without the items that state a value of the worked example that no event
    of `events` holds."""
    contents = [event_content(event) for event in events]
    foreign = [
        entity
        for entity in map(as_entity, _example_values(extractor))
        if not any(mentions(text, entity) for text in contents)
    ]
    if not foreign:
        return Uncopied(record, 0)
    updates = {}
    dropped = 0
    for section in SECTIONS:
        kept = [
            i for i in getattr(record, section) if not any(mentions(i.text, v) for v in foreign)
        ]
        dropped += len(getattr(record, section)) - len(kept)
        updates[section] = kept
    if not dropped:
        return Uncopied(record, 0)
    return Uncopied(record.model_copy(update=updates), dropped)
