"""When one decision replaces another: evidence in the events, never a shared value alone.

Two decisions about one order (a refund *and* a replacement for A-1001) or one flight (a
change *and* a seat choice) both stand. A later decision replaces an earlier one only
when a sentence of the later decision (its text, or an event it cites) says so: it holds
a change marker ("instead", "rather", "change ... to", "switch", "no longer", "cancel")
together with a value of the earlier decision, or, for an earlier decision without
values, with one of its content words. "Actually, refund A-1001 as store credit instead"
replaces "Refund A-1001 by card"; "Move me to HAT300 instead of HAT200" replaces "Move to
HAT200" although the two decisions share no value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agents.events import Event
from agents.summary.checks.coverage import event_content, key_terms, sentences
from agents.summary.entities import EntityExtractor
from agents.summary.record import Item

CHANGE_MARKER = re.compile(
    r"\binstead\b|\brather\b|\bchang(?:e|ed|es|ing)\b|\bswitch(?:ed|es|ing)?\b"
    r"|\bno longer\b|\bcancel(?:led|ed|s|ling)?\b|\bin place of\b",
    re.IGNORECASE,
)


def values_of(item: Item, extractor: EntityExtractor) -> frozenset[str]:
    """The values `extractor` finds in `item`'s text, case-folded."""
    return frozenset(value.casefold() for _, value, _, _ in extractor.from_text(item.text))


def _change_sentences(item: Item, earlier: Item, events: Sequence[Event]) -> list[str]:
    """Sentences of `item` and of the events it cites (not those `earlier` cites too: its
    own evidence) that hold a change marker."""
    cited = {e.id: e for e in events}
    own = [s for s in item.sources if s in cited and s not in earlier.sources]
    texts = [item.text, *(event_content(cited[s]) for s in own)]
    return [s.casefold() for text in texts for s in sentences(text) if CHANGE_MARKER.search(s)]


def replaces(
    later: Item, earlier: Item, events: Sequence[Event], extractor: EntityExtractor
) -> bool:
    """Whether `later` states that it replaces `earlier` (see the module docstring)."""
    changes = _change_sentences(later, earlier, events)
    if not changes:
        return False
    values = values_of(earlier, extractor)
    if values:
        return any(value in sentence for sentence in changes for value in values)
    terms = key_terms(earlier.text)
    return any(terms & key_terms(sentence) for sentence in changes)
