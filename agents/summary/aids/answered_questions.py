"""Answered questions: an open question a later agent turn answers is moved to facts.

The validator rejects an open question that a later agent message possibly answers
("open question 1 is possibly answered in e18; move it to facts or commitments",
`question_answer`, its own rule). On the embedded model that ended a window's first
attempt, and the retry is a whole model call to do what code can: the question is kept,
as the merge keeps a question a later window answers, as a fact saying it was asked and
answered later (`agents.summary.merge.ASKED_PREFIX`), citing the events the question
cited and the answering event, at most `max_sources` (the answer after the first events the question
cites). Nothing of the question is reworded and no answer is written: the
reader follows the answering event's citation.

A moved question that its new citations still do not support (a value none of them
mentions, content words none of them shares) is dropped instead; either way it is
counted. Dropping can lose a value only the question stated, so this runs before the
completion pass, which asks for or quotes whatever value the record then misses, and
the record is validated (recall included) as before. Grounding, after completion, can
re-point a question with values to an earlier event, after which a later turn answers
it: a second pass then moves it, and never drops it (no completion follows).
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.events import Event
from agents.summary.aids.grounding import item_values
from agents.summary.checks.coverage import (
    deadlines,
    event_content,
    question_answer,
    terms_unsupported,
)
from agents.summary.entities import Entity, EntityExtractor, mentions
from agents.summary.merge import ASKED_PREFIX
from agents.summary.record import MAX_SOURCES, HandoffRecord, Item


@dataclass(frozen=True)
class Answered:
    """The record with answered open questions moved to facts (or dropped), and how many
    were moved and dropped."""

    record: HandoffRecord
    moved: int = 0
    dropped: int = 0


def answered_fact(
    question: Item,
    answer: str,
    content: dict[str, str],
    values: list[Entity],
    *,
    max_sources: int = MAX_SOURCES,
) -> Item | None:
    """`question` as a fact citing `answer` after the first events it cites, or None when
    those do not support it as the validator judges a fact (a value or deadline none of
    them states, content words none of them shares)."""
    cited = [s for s in question.sources if s in content and s != answer]
    sources = [*cited[: max_sources - 1], answer]
    texts = [content[s] for s in sources]
    if any(not any(mentions(text, value) for text in texts) for value in values):
        return None
    if not values and terms_unsupported(question.text, texts):
        return None
    stated = {phrase for text in texts for phrase in deadlines(text)}
    if any(phrase not in stated for phrase in deadlines(question.text)):
        return None
    return question.model_copy(update={"text": ASKED_PREFIX + question.text, "sources": sources})


def move_answered_questions(
    record: HandoffRecord,
    events: list[Event],
    *,
    extractor: EntityExtractor,
    entities: list[Entity],
    max_sources: int = MAX_SOURCES,
    drop: bool = True,
) -> Answered:
    """`record` with every open question that a later event of `events` answers moved
    to facts, or dropped when it cannot be made a supported fact (with `drop`; without,
    left open for the validator to name)."""
    content = {event.id: event_content(event) for event in events}
    still_open: list[Item] = []
    facts: list[Item] = []
    moved = dropped = 0
    for question in record.open_questions:
        answer = question_answer(question, events, extractor)
        if answer is None:
            still_open.append(question)
            continue
        values = item_values(question, extractor, entities)
        fact = answered_fact(question, answer, content, values, max_sources=max_sources)
        if fact is None and not drop:
            still_open.append(question)
        elif fact is None:
            dropped += 1
        else:
            facts.append(fact)
            moved += 1
    if not moved and not dropped:
        return Answered(record)
    update = {"facts": [*record.facts, *facts], "open_questions": still_open}
    return Answered(record.model_copy(update=update), moved, dropped)
