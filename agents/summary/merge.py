"""Merging window records into one handoff record: deterministic code, no model.

- Facts, decisions and commitments are the union of every window's, in window order.
  Two items of a section are one when they say the same, or state the same values and
  one's content words hold the other's; the fuller one is kept, citing both (up to
  `MAX_SOURCES`).
- A later decision about the same values supersedes an earlier one. If the earlier one
  states a value nothing else in the merged record states (the flight that was changed,
  say), it is kept as a fact saying it was decided earlier and then changed, so the
  superseding never drops a value.
- An open question is resolved when a later agent turn answers it (the validator's own
  rule, `question_answer`) or a later window records an item with its values. It is
  then no longer open; if its values are stated nowhere else, it is kept as a fact
  saying the user asked, so no value the thread holds is lost.
- The goal is the latest validated window's goal.
- A user claim stays labelled: an item is a claim if any window labelled it one, or if
  the labelling rule finds it one over the whole thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.events import Event
from agents.summary.checks.claims import label_user_claims
from agents.summary.checks.coverage import key_terms, question_answer
from agents.summary.entities import EntityExtractor
from agents.summary.record import MAX_SOURCES, SECTIONS, HandoffRecord, Item

ASKED_PREFIX = "Asked, and answered later: "
SUPERSEDED_PREFIX = "Decided earlier, then changed: "


def _values(item: Item, extractor: EntityExtractor) -> frozenset[str]:
    return frozenset(value.casefold() for _, value, _, _ in extractor.from_text(item.text))


def _sources(first: Item, second: Item) -> list[str]:
    merged = list(dict.fromkeys([*first.sources, *second.sources]))
    return merged[:MAX_SOURCES]


def _same(a: Item, b: Item, extractor: EntityExtractor) -> Item | None:
    """The one item `a` and `b` are, when they are duplicates; else None. Items without
    values are duplicates only when their texts are the same."""
    values = _values(a, extractor)
    if values != _values(b, extractor):
        return None
    terms_a, terms_b = key_terms(a.text), key_terms(b.text)
    if " ".join(a.text.casefold().split()) == " ".join(b.text.casefold().split()):
        kept, other = a, b
    elif not values:
        return None
    elif terms_b <= terms_a:
        kept, other = a, b
    elif terms_a <= terms_b:
        kept, other = b, a
    else:
        return None
    return kept.model_copy(
        update={
            "sources": _sources(kept, other),
            "user_claim": kept.user_claim or other.user_claim,
        }
    )


def _union(items: Sequence[Item], extractor: EntityExtractor) -> list[Item]:
    merged: list[Item] = []
    for item in items:
        for index, existing in enumerate(merged):
            same = _same(existing, item, extractor)
            if same is not None:
                merged[index] = same
                break
        else:
            merged.append(item)
    return merged


def _supersede(
    decisions: Sequence[Item], extractor: EntityExtractor
) -> tuple[list[Item], list[Item]]:
    """Later decisions replace earlier ones about the same values: (kept, superseded)."""
    kept: list[Item] = []
    superseded: list[Item] = []
    for decision in decisions:
        values = _values(decision, extractor)
        if values:
            superseded += [d for d in kept if _values(d, extractor) & values]
            kept = [d for d in kept if not (_values(d, extractor) & values)]
        kept.append(decision)
    return kept, superseded


def _resolved(
    question: Item,
    window: int,
    later_items: Sequence[tuple[int, Item]],
    events: list[Event],
    extractor: EntityExtractor,
) -> bool:
    if question_answer(question, events, extractor) is not None:
        return True
    values = _values(question, extractor)
    return bool(values) and any(
        index > window and values <= _values(item, extractor) for index, item in later_items
    )


def merge_records(
    records: Sequence[HandoffRecord],
    events: list[Event],
    *,
    extractor: EntityExtractor | None = None,
) -> HandoffRecord:
    """One record from the validated window records `records` (in window order), over
    `events`, the events those windows cover."""
    if not records:
        raise ValueError("merge_records needs at least one record")
    extractor = extractor or EntityExtractor()
    answers = [
        (index, item)
        for index, record in enumerate(records)
        for section in ("facts", "decisions", "commitments")
        for item in getattr(record, section)
    ]
    still_open: list[Item] = []
    asked: list[Item] = []
    for index, record in enumerate(records):
        for question in record.open_questions:
            if _resolved(question, index, answers, events, extractor):
                asked.append(question)
            else:
                still_open.append(question)
    facts = _union([i for r in records for i in r.facts], extractor)
    decisions, superseded = _supersede(
        _union([i for r in records for i in r.decisions], extractor), extractor
    )
    commitments = _union([i for r in records for i in r.commitments], extractor)
    draft = HandoffRecord(
        goal=records[-1].goal,
        facts=facts,
        decisions=decisions,
        commitments=commitments,
        open_questions=_union(still_open, extractor),
    )
    stated = draft.all_text().casefold()
    for prefix, items in ((SUPERSEDED_PREFIX, superseded), (ASKED_PREFIX, asked)):
        for item in items:
            if any(v not in stated for v in _values(item, extractor)):
                kept = item.model_copy(update={"text": prefix + item.text})
                facts.append(kept)
                stated += "\n" + kept.text.casefold()
    merged = draft.model_copy(update={"facts": facts})
    labelled = label_user_claims(merged, events, extractor=extractor)
    return _keep_claims(merged, labelled)


def without_items(record: HandoffRecord, paths: set[str]) -> HandoffRecord:
    """`record` without the items at `paths` (`facts.2`, 1-based, as problems name them)."""
    updates = {
        section: [
            item
            for index, item in enumerate(getattr(record, section), start=1)
            if f"{section}.{index}" not in paths
        ]
        for section in SECTIONS
    }
    return record.model_copy(update=updates)


def _keep_claims(before: HandoffRecord, after: HandoffRecord) -> HandoffRecord:
    """`after`'s labels, with every item a window labelled a claim still one."""
    updates = {}
    for section in SECTIONS:
        updates[section] = [
            new.model_copy(update={"user_claim": new.user_claim or old.user_claim})
            for old, new in zip(getattr(before, section), getattr(after, section), strict=True)
        ]
    return after.model_copy(update=updates)
