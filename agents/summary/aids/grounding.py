"""Citation grounding: point an item's sources at the events that hold its values.

Small models copy identifiers correctly but often cite the neighbouring turn: the agent's
question "What is your name?" instead of the user's answer "Jane Doe". When an item's
text carries identifiers, amounts, dates or names, the events that support it can be
found exactly, by the same `mentions` test the validator applies. Grounding rewrites
such an item's sources to the cited events that do mention its values, plus, for each
value none of them mentions, the event that mentions the most of the item's values
(earliest first), within the limit of `max_sources` citations.

Grounding never launders a claim: a cited user-derived event (the user's, a hand-off
note, a compaction summary) is never removed, and an item that cites one gains an agent
source only when that source mentions every value the item states, so an agent turn
that merely names the same order cannot make the user's claim read as the agent's.

Grounding never invents support: an item keeps its model citations, and fails
validation as before, when any of its values appears in no event, when covering them
would need more than `max_sources` events, or when it carries no values at all (its
support is judged by content words, which cannot be located exactly). A cited id that is
not in the transcript (a window's record copying the worked example's ids) is replaced
only when the item's values can all be located; it counts as a user's source, so only an
agent event stating every value, or the user's own event, may stand in for it. Every
rewrite is counted, so an evaluation can say how many citations the system corrected.

Items that only restate a masked secret ("the PIN is ••••", no other value, no deadline,
not a commitment) are dropped and counted: the transcript the model reads has secrets
masked, so they say nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.events import Event
from agents.summary.checks.coverage import deadlines, event_content, is_agent_source
from agents.summary.entities import MASK, Entity, EntityExtractor, mentions
from agents.summary.record import MAX_SOURCES, SECTIONS, HandoffRecord, Item


@dataclass(frozen=True)
class Grounded:
    """The record with grounded citations, how many items were rewritten, and how many
    were dropped because they only said that a secret was given."""

    record: HandoffRecord
    corrected_items: int
    withheld_items: int = 0


def item_values(item: Item, extractor: EntityExtractor, entities: list[Entity]) -> list[Entity]:
    """The values in an item's text that a source must mention (the validator's rule)."""
    values = [
        Entity(type=type_, value=value, event_ids=())
        for type_, value, _, _ in extractor.from_text(item.text)
    ]
    seen = {v.value.casefold() for v in values}
    for entity in entities:
        if entity.value.casefold() in seen or entity.sensitive or len(entity.value) < 3:
            continue
        if mentions(item.text, entity):
            values.append(entity)
            seen.add(entity.value.casefold())
    return values


def ground_item(
    item: Item,
    values: list[Entity],
    content: dict[str, str],
    order: dict[str, int],
    *,
    agent_ids: frozenset[str],
    max_sources: int = MAX_SOURCES,
) -> Item | None:
    """`item` with sources that mention every value, or None when it cannot be grounded
    (or needs no change). `agent_ids` are the events agents and tools wrote: a cited
    user-derived event is never removed, and an item that cites one gains an agent
    source only when that source mentions every value the item states."""
    if not values:
        return None
    cited = [s for s in item.sources if s in content]
    invented = len(cited) < len(item.sources)
    missing = [v for v in values if not any(mentions(content[s], v) for s in cited)]
    if not missing and not invented:
        return None
    where = {v.value: [i for i, text in content.items() if mentions(text, v)] for v in values}
    if any(not events for events in where.values()):
        return None  # a value no event holds: unsupported, leave it to the validator
    # An id outside the transcript (a window's model copying the worked example's e3, say)
    # is replaced only by events that hold the item's values, and is taken for a user's
    # source: an agent source must then state every value the item states.
    from_user = invented or any(s not in agent_ids for s in cited)

    def may_add(event_id: str) -> bool:
        # An agent turn that merely names the same order must not lend a user's claim
        # an agent's voice: it has to state everything the item states.
        return (
            not from_user
            or event_id not in agent_ids
            or all(mentions(content[event_id], v) for v in values)
        )

    sources = [
        s for s in cited if s not in agent_ids or any(mentions(content[s], v) for v in values)
    ]
    for value in missing:
        if any(s in where[value.value] for s in sources):
            continue
        candidates = [i for i in where[value.value] if may_add(i)]
        if not candidates:
            return None
        best = min(
            candidates,
            key=lambda i: (-sum(i in where[v.value] for v in values), order[i]),
        )
        sources.append(best)
    if not sources or len(sources) > max_sources or sources == item.sources:
        return None
    return item.model_copy(update={"sources": sources})


def says_only_a_secret(section: str, item: Item) -> bool:
    """Whether a masked item says nothing but that a secret was given. A commitment
    ("your PIN is reset to •••• and works within 24 hours") is kept: it covers the
    agent's promise, which the validator demands; so is an item with a deadline."""
    return section != "commitments" and not deadlines(item.text)


def ground_citations(
    record: HandoffRecord,
    events: list[Event],
    *,
    extractor: EntityExtractor | None = None,
    entities: list[Entity] | None = None,
    max_sources: int = MAX_SOURCES,
) -> Grounded:
    """Ground every item of `record` whose values can be located in `events`."""
    extractor = extractor or EntityExtractor()
    entities = extractor.extract(events) if entities is None else entities
    content = {event.id: event_content(event) for event in events}
    order = {event.id: index for index, event in enumerate(events)}
    agent_ids = frozenset(event.id for event in events if is_agent_source(event))
    updates: dict[str, list[Item]] = {}
    corrected = 0
    withheld = 0
    for section in SECTIONS:
        items = []
        for item in getattr(record, section):
            values = item_values(item, extractor, entities)
            if MASK * 2 in item.text and not values and says_only_a_secret(section, item):
                # "The user's PIN is ••••": secrets are masked before the model reads the
                # transcript, so such an item carries nothing a reader can use.
                withheld += 1
                continue
            grounded = ground_item(
                item, values, content, order, agent_ids=agent_ids, max_sources=max_sources
            )
            if grounded is not None:
                corrected += 1
            items.append(grounded or item)
        updates[section] = items
    return Grounded(record.model_copy(update=updates), corrected, withheld)
