"""When one item replaces another: evidence in the events, never a shared value alone.

Two decisions about one order (a refund *and* a replacement for A-1001) or one flight (a
change *and* a seat choice) both stand, and so do two facts about one booking. A later
item replaces an earlier one of its section only when a sentence of the later item (its
text, or an event it cites that the earlier one does not) says so, in one of two ways:

- **It names the earlier one.** A change marker ("instead", "rather", "change ... to",
  "switch", "no longer", "cancel") together with a value of the earlier item, or, for an
  earlier item without values, with one of its content words. "Actually, refund A-1001
  as store credit instead" replaces "Refund A-1001 by card"; "Move me to HAT300 instead
  of HAT200" replaces "Move to HAT200" although the two share no value.
- **It changes the same slot.** The two items share a content word that is not a value
  (the slot: "address", "check-in"), and the later one states a new value for it:
  - another value of a type the earlier one states (another date, another amount,
    compared as values), in a sentence holding the slot's word and a change marker or a
    word that marks a new value ("new", "updated", "moved", "corrected", "actually"):
    "Check-in moved to March 10th" replaces "Check-in on March 8th";
  - or, when no value of one type changed, words of its own, in a sentence holding one of
    them and such a marker within three words of the slot's word: "New delivery address:
    40 Oak Avenue" replaces "The delivery address is 12 Elm Street".
  A second flight ("I now need a return flight on May 12") shares the slot but states no
  change, and both stand.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agents.events import Event
from agents.summary.checks.coverage import event_content, key_terms, sentences
from agents.summary.entities import Entity, EntityExtractor, mentions
from agents.summary.record import Item

CHANGE_MARKER = re.compile(
    r"\binstead\b|\brather\b|\bchang(?:e|ed|es|ing)\b|\bswitch(?:ed|es|ing)?\b"
    r"|\bno longer\b|\bcancel(?:led|ed|s|ling)?\b|\bin place of\b",
    re.IGNORECASE,
)
# Words that mark a new value for a slot: evidence only in a sentence that also holds the
# slot's word and, where the items have values, the new value (`changes_slot`).
NEW_VALUE_MARKER = re.compile(
    r"\bnew\b|\bupdat(?:e|ed|es|ing)\b|\bmov(?:e|ed|es|ing)\b|\bcorrect(?:ed|ion|ing)?\b"
    r"|\bactually\b",
    re.IGNORECASE,
)
# Without a new value to point at, a marker counts only this close to the slot's word
# ("new address", "address updated"), and not the sentence-wide "actually". "Now" is no
# marker at all: "I now need a return flight on May 12" keeps the outbound one.
NEAR_WORDS = 3
NEAR_MARKER = re.compile(
    r"\bnew\b|\bupdat(?:e|ed|es|ing)\b|\bmov(?:e|ed|es|ing)\b|\bcorrect(?:ed|ion|ing)?\b"
    r"|\bchang(?:e|ed|es|ing)\b|\bswitch(?:ed|es|ing)?\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"[\w'-]+")


def values_of(item: Item, extractor: EntityExtractor) -> frozenset[str]:
    """The values `extractor` finds in `item`'s text, case-folded."""
    return frozenset(value.casefold() for _, value, _, _ in extractor.from_text(item.text))


def _entities(item: Item, extractor: EntityExtractor) -> list[Entity]:
    return [
        Entity(type=type_, value=value, event_ids=())
        for type_, value, _, _ in extractor.from_text(item.text)
    ]


def _new_values(later: Item, earlier: Item, extractor: EntityExtractor) -> list[Entity]:
    """`later`'s values of a type of which `earlier` states another value (compared as
    values: "March 8th" is "2019-03-08")."""
    mine, theirs = _entities(later, extractor), _entities(earlier, extractor)
    replaced = {e.type for e in theirs if not mentions(later.text, e)}
    return [e for e in mine if e.type in replaced and not mentions(earlier.text, e)]


def _own_sentences(item: Item, earlier: Item, events: Sequence[Event]) -> list[str]:
    """Sentences of `item` and of the events it cites (not those `earlier` cites too: its
    own evidence), case-folded."""
    cited = {e.id: e for e in events}
    own = [s for s in item.sources if s in cited and s not in earlier.sources]
    texts = [item.text, *(event_content(cited[s]) for s in own)]
    return [s.casefold() for text in texts for s in sentences(text)]


def names_earlier(
    later: Item, earlier: Item, events: Sequence[Event], extractor: EntityExtractor
) -> bool:
    """Whether a change sentence of `later` names `earlier` by a value or content word."""
    changes = [s for s in _own_sentences(later, earlier, events) if CHANGE_MARKER.search(s)]
    if not changes:
        return False
    values = values_of(earlier, extractor)
    if values:
        return any(value in sentence for sentence in changes for value in values)
    terms = key_terms(earlier.text)
    return any(terms & key_terms(sentence) for sentence in changes)


def _labels(later: Item, earlier: Item, extractor: EntityExtractor) -> set[str]:
    """Words naming a value both items state ("order" in "order A-1001"): they name the
    thing both are about, not a slot of it."""
    shared = [e.value for e in _entities(later, extractor) if mentions(earlier.text, e)]
    return {
        term
        for value in shared
        for text in (later.text, earlier.text)
        for word in re.findall(rf"([A-Za-z][\w'-]*)\W+{re.escape(value)}", text, re.IGNORECASE)
        for term in key_terms(word)
    }


def _marker_near(sentence: str, slot: set[str]) -> bool:
    words = _TOKEN.findall(sentence)
    markers = [i for i, word in enumerate(words) if NEAR_MARKER.fullmatch(word)]
    slots = [i for i, word in enumerate(words) if key_terms(word) & slot]
    return any(abs(m - s) <= NEAR_WORDS for m in markers for s in slots)


def changes_slot(
    later: Item, earlier: Item, events: Sequence[Event], extractor: EntityExtractor
) -> bool:
    """Whether `later` states a new value for the slot `earlier` states (see the module
    docstring)."""
    values = " ".join(
        e.value for e in (*_entities(later, extractor), *_entities(earlier, extractor))
    )
    ours = key_terms(later.text) - key_terms(values)
    theirs = key_terms(earlier.text) - key_terms(values)
    slot = ours & theirs - _labels(later, earlier, extractor)
    if not slot:
        return False
    evidence = _own_sentences(later, earlier, events)
    new = _new_values(later, earlier, extractor)
    if new:
        return any(
            (CHANGE_MARKER.search(sentence) or NEW_VALUE_MARKER.search(sentence))
            and slot & key_terms(sentence)
            and any(mentions(sentence, value) for value in new)
            for sentence in evidence
        )
    # No value of one type changed: each must say in words what the other does not, and
    # a marker must stand next to the slot's word in a sentence holding a word of the new.
    fresh = ours - theirs
    if not (fresh and theirs - ours):
        return False
    return any(
        _marker_near(sentence, slot) and fresh & key_terms(sentence) for sentence in evidence
    )


def replaces(
    later: Item, earlier: Item, events: Sequence[Event], extractor: EntityExtractor
) -> bool:
    """Whether `later` states that it replaces `earlier` (see the module docstring)."""
    return names_earlier(later, earlier, events, extractor) or changes_slot(
        later, earlier, events, extractor
    )
