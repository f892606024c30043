"""The deterministic validator: every check a handoff record must pass before anyone reads it.

Checks only: it never changes the answer or the record it is given. `parse` is the one
schema check of a model answer; `check` runs every content check on a parsed record and
returns its typed `Problem`s, each with a sentence precise enough to go back to the model
in the retry ("fact 2 cites e5, which does not mention B-2040"). `Validator(strict=False)`
is the seed's validator (schema, sources present and existing, recall of the seed's
id/amount regex), kept for side-by-side measurement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from pydantic import ValidationError

from agents.events import Event
from agents.summary.aids.grounding import item_values
from agents.summary.checks.coverage import (
    deadlines,
    event_content,
    find_promises,
    promise_covered,
    question_answer,
    repetition,
    terms_unsupported,
)
from agents.summary.checks.goal import goal_problems
from agents.summary.entities import Entity, EntityExtractor, mentions
from agents.summary.problems import Problem, ProblemKind
from agents.summary.record import MAX_SOURCES, SECTIONS, HandoffRecord, Item
from agents.summary.transcript import RenderedTranscript

SEED_IDS = re.compile(r"\b[A-Z]{1,3}-\d{3,}\b|\$\d+(?:\.\d{2})?")
_SINGULAR = {
    "facts": "fact",
    "decisions": "decision",
    "commitments": "commitment",
    "open_questions": "open question",
}
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


@dataclass
class ValidationResult:
    """What the validator found. `record` is set whenever the output parsed."""

    record: HandoffRecord | None
    problems: list[Problem] = field(default_factory=list)
    cut_off: bool = False
    malformed: bool = False
    looped: bool = False
    relevance_failures: int = 0
    valid_citations: int = 0
    high_value: list[str] = field(default_factory=list)
    recalled: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.record is not None and not self.problems

    @property
    def no_high_value_entities(self) -> bool:
        """Nothing to recall: recall passes vacuously, so it is reported separately."""
        return not self.high_value

    def add(self, kind: ProblemKind, where: tuple[str, ...], message: str, value: str = "") -> None:
        """Record one problem (while the validator builds this result)."""
        self.problems.append(Problem(kind, where, message, value))


def looks_cut_off(text: str) -> bool:
    """True when `text` is the start of a JSON value that ends before it closes."""
    depth = 0
    in_string = escaped = False
    started = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
            started = True
        elif char in "}]":
            depth -= 1
    return started and (depth > 0 or in_string)


def answer_body(text: str) -> str:
    """A model answer without surrounding space or a ```json fence."""
    body = text.strip()
    fenced = _FENCE.match(body)
    return fenced.group(1) if fenced else body


def _loop_problem(loop: str) -> Problem:
    return Problem(ProblemKind.LOOP, (), f"output loops: it repeats {loop[:60]!r}; answer once")


def item_path(section: str, index: int) -> str:
    """Where an item is in the record: `facts.2` (1-based, as the messages count)."""
    return f"{section}.{index}"


class Validator:
    """Checks a model answer against the session it summarises.

    `strict=True` (the default) adds to the seed's checks: cut-off detection, at most
    `max_sources` citations per item, relevance of citations (values and deadlines),
    possibly-answered open questions, missing agent commitments, a loop detector, no
    sensitive values, and a goal whose values the transcript states and that holds no
    link (`agents.summary.checks.goal`).
    """

    def __init__(
        self,
        *,
        strict: bool = True,
        extractor: EntityExtractor | None = None,
        max_sources: int = MAX_SOURCES,
    ) -> None:
        self.strict = strict
        self.extractor = extractor or EntityExtractor()
        self.max_sources = max_sources

    def validate(
        self,
        text: str,
        events: list[Event],
        *,
        rendered: RenderedTranscript | None = None,
        entities: list[Entity] | None = None,
        finish_reason: str | None = None,
    ) -> ValidationResult:
        """Parse and check the model's raw answer `text` for the session of `events`."""
        parsed = self.parse(text, finish_reason=finish_reason)
        return self.check(parsed, events, rendered=rendered, entities=entities)

    def parse(self, text: str, *, finish_reason: str | None = None) -> ValidationResult:
        """The one schema check of an answer: its record (None when it does not parse)
        and what is wrong with its form (loops, cut off, not JSON, not the schema)."""
        body = answer_body(text)
        loop = repetition(body) if self.strict else None
        looped = loop is not None
        problems = [] if loop is None else [_loop_problem(loop)]

        def failed(kind: ProblemKind, message: str) -> ValidationResult:
            cut_off = kind is ProblemKind.CUT_OFF
            return ValidationResult(
                None,
                [*problems, Problem(kind, (), message)],
                cut_off=cut_off,
                malformed=not cut_off,
                looped=looped,
            )

        if not body:
            return failed(ProblemKind.MALFORMED, "output is empty; answer with the JSON record")
        try:
            data = json.loads(body)
        except json.JSONDecodeError as error:
            if self.strict and (finish_reason == "length" or looks_cut_off(body)):
                return failed(
                    ProblemKind.CUT_OFF,
                    f"output was cut off after {len(body)} characters before the JSON closed; "
                    f"be brief and cite at most {self.max_sources} events per item",
                )
            return failed(
                ProblemKind.MALFORMED, f"output is not valid JSON ({error.msg} at {error.pos})"
            )
        try:
            record = HandoffRecord.model_validate(data)
        except ValidationError as error:
            where = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}"
                for e in error.errors()[:5]
            )
            return failed(ProblemKind.MALFORMED, f"output does not match the schema ({where})")
        missing = [f for f in SECTIONS if f not in data]
        if missing:
            # The schema requires every list (empty is a good answer): a missing one is
            # not read as empty, since the model may have stopped or skipped it.
            where = "; ".join(f"{f}: Field required" for f in missing)
            return failed(ProblemKind.MALFORMED, f"output does not match the schema ({where})")
        return ValidationResult(record, problems, looped=looped)

    def check(
        self,
        parsed: ValidationResult,
        events: list[Event],
        *,
        rendered: RenderedTranscript | None = None,
        entities: list[Entity] | None = None,
        goal_support: Sequence[Event] = (),
    ) -> ValidationResult:
        """A new result: `parsed` (from `parse`, its record possibly repaired since) with
        every content check's problems added; without a record, `parsed` as it is.

        `goal_support` are events besides `events` that the goal may draw on: a window's
        goal is the thread's, stated by events before the window too. Items still cite
        only `events`."""
        record = parsed.record
        if record is None:
            return parsed
        found = replace(parsed, problems=list(parsed.problems), high_value=[], recalled=[])
        if self.strict:
            self._check_strict(record, events, rendered, entities, found, goal_support)
        else:
            self._check_seed(record, events, rendered, found)
        return found

    def _check_sources(
        self, path: str, name: str, item: Item, known: set[str], found: ValidationResult
    ) -> list[str]:
        if not item.sources:
            found.add(ProblemKind.NO_SOURCES, (path,), f"{name} has no sources")
            return []
        unknown = [s for s in item.sources if s not in known]
        if unknown:
            listed = ", ".join(unknown[:5])
            found.add(
                ProblemKind.UNKNOWN_SOURCE,
                (path, *unknown),
                f"{name} cites {listed}, which is not in the transcript",
            )
        if self.strict and len(item.sources) > self.max_sources:
            found.add(
                ProblemKind.OVER_CITED,
                (path,),
                f"{name} cites {len(item.sources)} events; cite at most {self.max_sources}, "
                "the most specific",
            )
        valid = [s for s in item.sources if s in known]
        found.valid_citations += len(valid)
        return valid

    def _check_seed(
        self,
        record: HandoffRecord,
        events: list[Event],
        rendered: RenderedTranscript | None,
        found: ValidationResult,
    ) -> None:
        known = {event.id for event in events}
        for section, index, item in record.items():
            name = f"{_SINGULAR[section]} {index}"
            self._check_sources(item_path(section, index), name, item, known, found)
        transcript = rendered.text if rendered else "\n".join(map(event_content, events))
        summary = record.all_text()
        found.high_value = list(dict.fromkeys(SEED_IDS.findall(transcript)))
        for value in found.high_value:
            if value in summary:
                found.recalled.append(value)
            else:
                found.add(ProblemKind.DROPPED_ENTITY, (), f"dropped entity {value}", value)

    def _check_strict(
        self,
        record: HandoffRecord,
        events: list[Event],
        rendered: RenderedTranscript | None,
        entities: list[Entity] | None,
        found: ValidationResult,
        goal_support: Sequence[Event] = (),
    ) -> None:
        by_id = {event.id: event for event in events}
        content = {event.id: event_content(event) for event in events}
        entities = self.extractor.extract(events) if entities is None else entities
        secrets = [e for e in entities if e.sensitive]
        for section, index, item in record.items():
            path, name = item_path(section, index), f"{_SINGULAR[section]} {index}"
            cited = self._check_sources(path, name, item, set(by_id), found)
            for secret in secrets:
                if mentions(item.text, secret):
                    found.add(
                        ProblemKind.SENSITIVE_VALUE,
                        (path,),
                        f"{name} repeats a sensitive {secret.type} ({secret.masked}); leave it out",
                    )
            if cited:
                self._check_relevance(path, name, item, cited, content, entities, found)
            if section == "open_questions" and cited:
                self._check_answered(path, name, item, events, found)
        goal_texts = [*content.values(), *(event_content(e) for e in goal_support)]
        found.problems += goal_problems(record.goal, goal_texts, self.extractor, entities)
        self._check_recall(record, entities, rendered, found)
        self._check_commitments(record, events, found)

    def _check_relevance(
        self,
        path: str,
        name: str,
        item: Item,
        cited: list[str],
        content: dict[str, str],
        entities: list[Entity],
        found: ValidationResult,
    ) -> None:
        texts = [content[s] for s in cited]
        values = item_values(item, self.extractor, entities)
        which = ", ".join(cited)
        does = "does" if len(cited) == 1 else "do"
        verb = f"which {does}"
        where = (path, *cited)
        for value in values:
            if not any(mentions(text, value) for text in texts):
                found.relevance_failures += 1
                found.add(
                    ProblemKind.IRRELEVANT_SOURCE,
                    where,
                    f"{name} cites {which}, {verb} not mention {value.value}",
                    value.value,
                )
        stated = {phrase for text in texts for phrase in deadlines(text)}
        for phrase in deadlines(item.text):
            if phrase not in stated:
                found.relevance_failures += 1
                found.add(
                    ProblemKind.IRRELEVANT_SOURCE,
                    where,
                    f"{name} says {phrase!r}, but {which} {does} not say it; "
                    "state only deadlines the agent stated",
                    phrase,
                )
        if not values and terms_unsupported(item.text, texts):
            # Without identifiers, judge by content words.
            found.relevance_failures += 1
            found.add(
                ProblemKind.IRRELEVANT_SOURCE,
                where,
                f"{name} cites {which}, {verb} not support it",
            )

    def _check_answered(
        self, path: str, name: str, item: Item, events: list[Event], found: ValidationResult
    ) -> None:
        answer = question_answer(item, events, self.extractor)
        if answer is not None:
            found.add(
                ProblemKind.ANSWERED_QUESTION,
                (path, answer),
                f"{name} is possibly answered in {answer}; move it to facts or commitments",
            )

    def _check_recall(
        self,
        record: HandoffRecord,
        entities: list[Entity],
        rendered: RenderedTranscript | None,
        found: ValidationResult,
    ) -> None:
        summary = record.all_text()
        visible = rendered.text if rendered is not None else None
        for entity in entities:
            if not entity.high_value or entity.sensitive:
                continue
            if visible is not None and not mentions(visible, entity):
                continue  # cut from the rendering: the model never saw it
            found.high_value.append(entity.value)
            if mentions(summary, entity):
                found.recalled.append(entity.value)
            else:
                found.add(
                    ProblemKind.DROPPED_ENTITY,
                    tuple(entity.event_ids),
                    f"dropped entity {entity.value}",
                    entity.value,
                )

    def _check_commitments(
        self, record: HandoffRecord, events: list[Event], found: ValidationResult
    ) -> None:
        texts = [item.text for item in record.commitments]
        cited = {s for item in record.commitments for s in item.sources}
        for promise in find_promises(events):
            if not promise_covered(promise, texts, cited):
                quote = (
                    promise.sentence
                    if len(promise.sentence) <= 120
                    else promise.sentence[:117] + "..."
                )
                found.add(
                    ProblemKind.MISSING_COMMITMENT,
                    (promise.event_id,),
                    f'missing commitment from {promise.event_id}: "{quote}"',
                )
