"""Merging window records into one handoff record: deterministic code, no model.

- Facts, decisions and commitments are the union of every window's, in window order.
  Two items of a section are one when they say the same, or state the same values and
  one's content words hold the other's; the fuller one is kept, citing both (up to
  `MAX_SOURCES`).
- Facts, decisions and commitments stay apart unless a later item of the same section
  states that it replaces an earlier one (`agents.summary.supersession`: a change marker
  next to the earlier item's value, or the same slot given a new value, in the later
  item or the events it cites). A shared value alone is no evidence: a refund and a
  replacement for one order both stand. "The address is 12 Elm St" (one window) is
  replaced by "New address: 40 Oak Ave" (a later one), so a record never lists a stale
  fact beside the newer one. If a replaced item states a value nothing else in the
  merged record states (the flight that was changed, say), it is kept as a fact saying
  it was stated, decided or promised earlier and then changed, so the superseding never
  drops a value.
- An open question is resolved when a later agent turn answers it (the validator's own
  rule, `question_answer`) or a later window records an item with its values. It is
  then no longer open; if its values are stated nowhere else, it is kept as a fact
  saying the user asked, so no value the thread holds is lost.
- The goal is the latest validated window's goal.
- With a `check` (the validator over the merged events), the record is checked after
  every change the merge makes (the duplicates merged, each item replaced, each
  question resolved): a change that adds problems is undone, so the merge never turns
  validated window records into a record that fails where they did not.
- A user claim stays labelled: an item is a claim if any window labelled it one, or if
  the labelling rule finds it one over the whole thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from agents.events import Event
from agents.summary.checks.claims import label_user_claims
from agents.summary.checks.coverage import key_terms, question_answer
from agents.summary.entities import EntityExtractor
from agents.summary.problems import Problem
from agents.summary.record import MAX_SOURCES, SECTIONS, HandoffRecord, Item
from agents.summary.supersession import replaces, values_of

logger = logging.getLogger(__name__)

ASKED_PREFIX = "Asked, and answered later: "
# How an item a later one replaced is kept, as a fact, when it holds a value nothing
# else in the record states.
CHANGED_PREFIXES = {
    "facts": "Stated earlier, then changed: ",
    "decisions": "Decided earlier, then changed: ",
    "commitments": "Promised earlier, then changed: ",
}


Check = Callable[[HandoffRecord], Sequence[Problem]]
"""The validator's problems with a merged record (over the events the merge covers)."""


def _sources(first: Item, second: Item) -> list[str]:
    merged = list(dict.fromkeys([*first.sources, *second.sources]))
    return merged[:MAX_SOURCES]


def _same(a: Item, b: Item, extractor: EntityExtractor) -> Item | None:
    """The one item `a` and `b` are, when they are duplicates; else None. Items without
    values are duplicates only when their texts are the same."""
    values = values_of(a, extractor)
    if values != values_of(b, extractor):
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


class _Checked:
    """The record being merged, with its problems; `offer` keeps a change that adds none."""

    def __init__(self, record: HandoffRecord, check: Check | None) -> None:
        self.record = record
        self.check = check
        self.problems = len(check(record)) if check is not None else 0

    def offer(self, changed: HandoffRecord, what: str) -> bool:
        if self.check is None:
            self.record = changed
            return True
        problems = len(self.check(changed))
        if problems > self.problems:
            logger.info("merge: %s undone, it adds %d problem(s)", what, problems - self.problems)
            return False
        self.record, self.problems = changed, problems
        return True


def _kept_as_fact(
    record: HandoffRecord, item: Item, prefix: str, extractor: EntityExtractor
) -> list[Item]:
    """`record`'s facts, plus `item` prefixed when it states a value `record` does not."""
    stated = record.all_text().casefold()
    if all(v in stated for v in values_of(item, extractor)):
        return list(record.facts)
    return [*record.facts, item.model_copy(update={"text": prefix + item.text})]


def _supersede(
    merged: _Checked, section: str, events: list[Event], extractor: EntityExtractor
) -> None:
    """Drop every item of `section` a later one of it states it replaces, keeping its
    unstated values as a fact marked as changed; each replacement is one checked change.
    Items already so marked are history, never replaced nor replacing."""
    prefix = CHANGED_PREFIXES[section]
    index = 0
    while index < len(getattr(merged.record, section)):
        items = getattr(merged.record, section)
        earlier = items[index]
        if not _changed(earlier) and any(
            replaces(later, earlier, events, extractor)
            for later in items[index + 1 :]
            if not _changed(later)
        ):
            without = merged.record.model_copy(
                update={section: [*items[:index], *items[index + 1 :]]}
            )
            facts = _kept_as_fact(without, earlier, prefix, extractor)
            if merged.offer(
                without.model_copy(update={"facts": facts}), f"replacing {earlier.text!r}"
            ):
                continue
        index += 1


def _changed(item: Item) -> bool:
    return item.text.startswith(tuple(CHANGED_PREFIXES.values()))


def _resolved(
    question: Item,
    window: int,
    later_items: Sequence[tuple[int, Item]],
    events: list[Event],
    extractor: EntityExtractor,
) -> bool:
    if question_answer(question, events, extractor) is not None:
        return True
    values = values_of(question, extractor)
    return bool(values) and any(
        index > window and values <= values_of(item, extractor) for index, item in later_items
    )


def merge_records(
    records: Sequence[HandoffRecord],
    events: list[Event],
    *,
    extractor: EntityExtractor | None = None,
    check: Check | None = None,
) -> HandoffRecord:
    """One record from the validated window records `records` (in window order), over
    `events`, the events those windows cover; with `check`, every change is checked."""
    if not records:
        raise ValueError("merge_records needs at least one record")
    extractor = extractor or EntityExtractor()
    goal = records[-1].goal
    merged = _Checked(
        HandoffRecord(
            goal=goal,
            **{section: [i for r in records for i in getattr(r, section)] for section in SECTIONS},
        ),
        check,
    )
    merged.offer(
        HandoffRecord(
            goal=goal,
            **{
                section: _union([i for r in records for i in getattr(r, section)], extractor)
                for section in ("facts", "decisions", "commitments")
            },
            open_questions=merged.record.open_questions,
        ),
        "merging duplicates",
    )
    for section in ("facts", "decisions", "commitments"):
        _supersede(merged, section, events, extractor)
    answers = [
        (index, item)
        for index, record in enumerate(records)
        for section in ("facts", "decisions", "commitments")
        for item in getattr(record, section)
    ]
    asked: list[Item] = []
    still_open: list[Item] = []
    for index, record in enumerate(records):
        for question in record.open_questions:
            if _resolved(question, index, answers, events, extractor):
                asked.append(question)
            else:
                still_open.append(question)
    resolved = merged.record.model_copy(update={"open_questions": _union(still_open, extractor)})
    for question in asked:
        resolved = resolved.model_copy(
            update={"facts": _kept_as_fact(resolved, question, ASKED_PREFIX, extractor)}
        )
    merged.offer(resolved, "resolving answered questions")
    labelled = label_user_claims(merged.record, events, extractor=extractor)
    return _keep_claims(merged.record, labelled)


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
