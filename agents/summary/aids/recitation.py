"""Re-citation: an item without values whose citations do not support it cites the
events that do, or is dropped.

An item that carries no identifier, amount, date or name is judged by content words:
the validator rejects it when it has some, every event it cites has some, and no cited
event shares one (`terms_unsupported`, the validator's own test). On the embedded model
that was what still ended a window's first attempt ("open question 1 cites e17, which
does not support it"): the item is right, its citation is the neighbouring turn, and the
retry costs a whole model call. Such an item is re-cited to the events of the transcript
it was given (a window's own events: never outside it) that share its key terms, the
most specific first (the most terms shared, then the earliest), adding an event only
while it brings a term the chosen ones lack, at most `max_sources`. An open question is
re-cited to the earliest such event alone instead: the event sharing the most of a question's
words is often the agent's answer, and a question citing its answer hides that it was
answered, where citing where it was raised lets the answered-question check
(`agents.summary.aids.answered_questions`, then the validator) find the answer after it.
An item that no event supports is dropped and counted, never reworded.

The same holds for an item without values that cites no event at all, or only ids that
are not in the transcript. An item citing a source that cannot be judged (too short to
have content words) is left as it is, as the validator leaves it. Items with values are
grounding's (`agents.summary.aids.grounding`): their support can be located exactly.

An item stating a value that no event of the transcript holds (a small model's "April 4th"
in a thread of March dates, by the validator's own `mentions` test, dates by value) is
dropped and counted too: no citation can support it, so it could only fail the window, and a
failed window is a gap that costs every value in it. Completion then asks for, or quotes,
whatever value or promise the dropped item displaced; nothing is added in its place here.

Re-citing launders nothing: who said an item is decided afterwards by the claims rule
over the new citations (a content word only a user's event holds keeps it a user claim).
An item without values states none, so dropping one loses nothing recall checks; the
record is validated as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.events import Event
from agents.summary.aids.grounding import item_values
from agents.summary.checks.coverage import event_content, key_terms, terms_unsupported
from agents.summary.entities import Entity, EntityExtractor, mentions
from agents.summary.record import MAX_SOURCES, SECTIONS, HandoffRecord, Item


@dataclass(frozen=True)
class Recited:
    """The record with value-less items re-cited to the events that support them, how
    many were re-cited, and how many were dropped because no event supports them."""

    record: HandoffRecord
    recited: int = 0
    dropped: int = 0


def supporting_events(
    text: str,
    content: dict[str, str],
    *,
    max_sources: int = MAX_SOURCES,
    earliest: bool = False,
) -> list[str]:
    """The events of `content` (id to text, in transcript order) that share key terms
    with `text`: the one sharing the most first (the earliest of equals), then each that
    adds a term the chosen ones lack, at most `max_sources`; with `earliest`, only the
    earliest that shares one. Empty when none shares one."""
    terms = key_terms(text)
    shared = {event_id: terms & key_terms(body) for event_id, body in content.items()}
    order = {event_id: index for index, event_id in enumerate(content)}
    ranked = sorted(
        (event_id for event_id, common in shared.items() if common),
        key=lambda event_id: (0 if earliest else -len(shared[event_id]), order[event_id]),
    )
    if earliest:
        return ranked[:1]
    chosen: list[str] = []
    covered: set[str] = set()
    for event_id in ranked:
        if len(chosen) >= max_sources:
            break
        if not chosen or shared[event_id] - covered:
            chosen.append(event_id)
            covered |= shared[event_id]
    return sorted(chosen, key=order.__getitem__)


def recite_item(
    item: Item,
    content: dict[str, str],
    *,
    max_sources: int = MAX_SOURCES,
    question: bool = False,
) -> Item | None:
    """`item` citing the events that support it; `item` itself when its citations
    already pass the validator's content-word test (or cannot be judged); None when
    no event supports it. For an item without values only. An open question
    (`question`) cites the earliest supporting event alone: where it was raised, so that an
    answer after them is still found (the most specific is often that answer)."""
    cited = [s for s in item.sources if s in content]
    if cited and len(cited) == len(item.sources):
        if not terms_unsupported(item.text, [content[s] for s in cited]):
            return item
    elif cited and not terms_unsupported(item.text, [content[s] for s in cited]):
        # Ids outside the transcript beside events that support it: drop the ids.
        return item.model_copy(update={"sources": cited})
    if not key_terms(item.text):
        return item  # no content words to judge by: left to the validator
    sources = supporting_events(item.text, content, max_sources=max_sources, earliest=question)
    if not sources:
        return None
    return item.model_copy(update={"sources": sources})


def recite_unsupported(
    record: HandoffRecord,
    events: list[Event],
    *,
    extractor: EntityExtractor,
    entities: list[Entity],
    max_sources: int = MAX_SOURCES,
) -> Recited:
    """Re-cite (or drop) every item of `record` without values whose citations do not
    support it, to the events of `events` that do; drop every item stating a value that
    no event of `events` holds."""
    content = {event.id: event_content(event) for event in events}
    updates: dict[str, list[Item]] = {}
    recited = dropped = 0
    for section in SECTIONS:
        items: list[Item] = []
        for item in getattr(record, section):
            values = item_values(item, extractor, entities)
            if any(not any(mentions(text, v) for text in content.values()) for v in values):
                dropped += 1
                continue
            if values:
                items.append(item)
                continue
            repaired = recite_item(
                item, content, max_sources=max_sources, question=section == "open_questions"
            )
            if repaired is None:
                dropped += 1
                continue
            if repaired.sources != item.sources:
                recited += 1
            items.append(repaired)
        updates[section] = items
    if not recited and not dropped:
        return Recited(record)
    return Recited(record.model_copy(update=updates), recited, dropped)
