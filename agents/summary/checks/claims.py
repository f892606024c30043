"""User claims: what only the user (or a text derived from the user's) says, labelled.

A record item is trusted only as far as an agent or a tool said it. Who is an agent
source is decided per event: users, hand-off notes and records (`handoff`) and
compaction summaries are user-derived, because people and earlier models wrote them
from what the user said. Everything else is decided per value, not per citation:

- every value (id, amount, date, ...) and every deadline an item states must appear in
  an agent source it cites;
- every content word it shares with a user-derived source it cites must also appear in
  an agent source it cites, so "pre-approved for a full refund" stays the user's even
  when the item also cites an agent turn that names the same order;
- a commitment must cite an agent event that states that promise.

An item that fails any of these is a user claim. The label is set by code, never taken
from the model, and every rendering and the memory store keep it.
"""

from __future__ import annotations

from agents.events import Event
from agents.summary.aids.grounding import item_values
from agents.summary.checks.coverage import (
    deadlines,
    event_content,
    find_promises,
    is_agent_source,
    key_terms,
    promise_covered,
)
from agents.summary.entities import Entity, EntityExtractor, mentions
from agents.summary.record import SECTIONS, HandoffRecord, Item


def is_user_claim(
    section: str,
    item: Item,
    by_id: dict[str, Event],
    values: list[Entity],
) -> bool:
    """Whether `item` (of `section`) states anything no agent source it cites states."""
    cited = [by_id[s] for s in item.sources if s in by_id]
    agent = [event_content(e) for e in cited if is_agent_source(e)]
    if not agent:
        return True
    if any(not any(mentions(text, value) for text in agent) for value in values):
        return True
    stated = {phrase for text in agent for phrase in deadlines(text)}
    if any(phrase not in stated for phrase in deadlines(item.text)):
        return True
    agent_terms = set().union(*(key_terms(text) for text in agent))
    user_terms = set().union(
        *(key_terms(event_content(e)) for e in cited if not is_agent_source(e))
    )
    if (key_terms(item.text) & user_terms) - agent_terms:
        return True
    if section == "commitments":
        promises = find_promises([e for e in cited if is_agent_source(e)])
        return not any(promise_covered(p, [item.text], set()) for p in promises)
    return False


def label_user_claims(
    record: HandoffRecord,
    events: list[Event],
    *,
    extractor: EntityExtractor | None = None,
    entities: list[Entity] | None = None,
) -> HandoffRecord:
    """A copy of `record` with every item's `user_claim` set by `is_user_claim`."""
    extractor = extractor or EntityExtractor()
    entities = extractor.extract(events) if entities is None else entities
    by_id = {event.id: event for event in events}
    updates = {}
    for section in SECTIONS:
        items = []
        for item in getattr(record, section):
            values = item_values(item, extractor, entities)
            claim = is_user_claim(section, item, by_id, values)
            items.append(item.model_copy(update={"user_claim": claim}))
        updates[section] = items
    return record.model_copy(update=updates)
