"""The deterministic validator: every check a handoff record must pass before anyone reads it.

Pure: text and events in, a `ValidationResult` out. Each problem is a sentence precise
enough to go back to the model in the retry ("fact 2 cites e5, which does not mention
B-2040"). `Validator(strict=False)` is the seed's validator (schema, sources present and
existing, recall of the seed's id/amount regex), kept for side-by-side measurement.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from pydantic import ValidationError

from agents.events import Event
from agents.summary.coverage import (
    answering_event,
    deadlines,
    event_content,
    find_promises,
    key_terms,
    promise_covered,
    repetition,
)
from agents.summary.entities import Entity, EntityExtractor, mentions
from agents.summary.grounding import ground_citations, item_values
from agents.summary.record import MAX_SOURCES, HandoffRecord, Item
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
    problems: list[str] = field(default_factory=list)
    cut_off: bool = False
    malformed: bool = False
    looped: bool = False
    relevance_failures: int = 0
    valid_citations: int = 0
    high_value: list[str] = field(default_factory=list)
    recalled: list[str] = field(default_factory=list)
    grounded_items: int = 0
    withheld_items: int = 0

    @property
    def passed(self) -> bool:
        return self.record is not None and not self.problems

    @property
    def no_high_value_entities(self) -> bool:
        """Nothing to recall: recall passes vacuously, so it is reported separately."""
        return not self.high_value


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


def parse_record(text: str) -> HandoffRecord | None:
    """The record in a model answer (a ```json fence allowed), or None."""
    try:
        return HandoffRecord.model_validate(json.loads(answer_body(text)))
    except (json.JSONDecodeError, ValidationError):
        return None


def record_json(record: HandoffRecord) -> str:
    """A record as the model's answer format (no system labels)."""
    return json.dumps(
        record.model_dump(mode="json", exclude={s: {"__all__": {"user_claim"}} for s in _SINGULAR}),
        ensure_ascii=False,
    )


def label_user_claims(record: HandoffRecord, events: list[Event]) -> HandoffRecord:
    """A copy of `record` where items cited only from user-authored events are user claims."""
    authors = {event.id: event.author for event in events}
    updates = {}
    for section in _SINGULAR:
        items = []
        for item in getattr(record, section):
            cited = [authors[s] for s in item.sources if s in authors]
            claim = bool(cited) and all(author == "user" for author in cited)
            items.append(item.model_copy(update={"user_claim": claim}))
        updates[section] = items
    return record.model_copy(update=updates)


class Validator:
    """Checks a model answer against the session it summarises.

    `strict=True` (the default) adds to the seed's checks: cut-off detection, at most
    `max_sources` citations per item, relevance of citations (values and deadlines),
    possibly-answered open questions, missing agent commitments, a loop detector, and no
    sensitive values. `ground=True` first points value-bearing items at the events that
    hold their values (`agents.summary.grounding`); the checks then run on the result.
    """

    def __init__(
        self,
        *,
        strict: bool = True,
        extractor: EntityExtractor | None = None,
        max_sources: int = MAX_SOURCES,
        ground: bool = False,
    ) -> None:
        self.strict = strict
        self.extractor = extractor or EntityExtractor()
        self.max_sources = max_sources
        self.ground = ground

    def validate(
        self,
        text: str,
        events: list[Event],
        *,
        rendered: RenderedTranscript | None = None,
        entities: list[Entity] | None = None,
        finish_reason: str | None = None,
    ) -> ValidationResult:
        """Validate the model's raw answer `text` for the session whose events are `events`."""
        result = ValidationResult(record=None)
        body = answer_body(text)
        if self.strict:
            loop = repetition(body)
            if loop is not None:
                result.looped = True
                result.problems.append(f"output loops: it repeats {loop[:60]!r}; answer once")
        record = self._parse(body, finish_reason, result)
        if record is None:
            return result
        result.record = record
        if self.strict:
            self._check_strict(record, events, rendered, entities, result)
        else:
            self._check_seed(record, events, rendered, result)
        return result

    def _parse(
        self, body: str, finish_reason: str | None, result: ValidationResult
    ) -> HandoffRecord | None:
        if not body:
            result.malformed = True
            result.problems.append("output is empty; answer with the JSON record")
            return None
        try:
            data = json.loads(body)
        except json.JSONDecodeError as error:
            if self.strict and (finish_reason == "length" or looks_cut_off(body)):
                result.cut_off = True
                result.problems.append(
                    f"output was cut off after {len(body)} characters before the JSON closed; "
                    f"be brief and cite at most {self.max_sources} events per item"
                )
            else:
                result.malformed = True
                result.problems.append(f"output is not valid JSON ({error.msg} at {error.pos})")
            return None
        try:
            return HandoffRecord.model_validate(data)
        except ValidationError as error:
            result.malformed = True
            where = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}"
                for e in error.errors()[:5]
            )
            result.problems.append(f"output does not match the schema ({where})")
            return None

    def _check_sources(
        self, name: str, item: Item, known: set[str], result: ValidationResult
    ) -> list[str]:
        if not item.sources:
            result.problems.append(f"{name} has no sources")
            return []
        unknown = [s for s in item.sources if s not in known]
        if unknown:
            listed = ", ".join(unknown[:5])
            result.problems.append(f"{name} cites {listed}, which is not in the transcript")
        if self.strict and len(item.sources) > self.max_sources:
            result.problems.append(
                f"{name} cites {len(item.sources)} events; cite at most {self.max_sources}, "
                "the most specific"
            )
        valid = [s for s in item.sources if s in known]
        result.valid_citations += len(valid)
        return valid

    def _check_seed(
        self,
        record: HandoffRecord,
        events: list[Event],
        rendered: RenderedTranscript | None,
        result: ValidationResult,
    ) -> None:
        known = {event.id for event in events}
        for section, index, item in record.items():
            self._check_sources(f"{_SINGULAR[section]} {index}", item, known, result)
        transcript = rendered.text if rendered else "\n".join(map(event_content, events))
        summary = record.all_text()
        result.high_value = list(dict.fromkeys(SEED_IDS.findall(transcript)))
        for value in result.high_value:
            if value in summary:
                result.recalled.append(value)
            else:
                result.problems.append(f"dropped entity {value}")

    def _check_strict(
        self,
        record: HandoffRecord,
        events: list[Event],
        rendered: RenderedTranscript | None,
        entities: list[Entity] | None,
        result: ValidationResult,
    ) -> None:
        by_id = {event.id: event for event in events}
        content = {event.id: event_content(event) for event in events}
        entities = self.extractor.extract(events) if entities is None else entities
        if self.ground:
            grounded = ground_citations(
                record,
                events,
                extractor=self.extractor,
                entities=entities,
                max_sources=self.max_sources,
            )
            record = result.record = grounded.record
            result.grounded_items = grounded.corrected_items
            result.withheld_items = grounded.withheld_items
        secrets = [e for e in entities if e.sensitive]
        for section, index, item in record.items():
            name = f"{_SINGULAR[section]} {index}"
            cited = self._check_sources(name, item, set(by_id), result)
            for secret in secrets:
                if mentions(item.text, secret):
                    result.problems.append(
                        f"{name} repeats a sensitive {secret.type} ({secret.masked}); leave it out"
                    )
            if cited:
                self._check_relevance(name, item, cited, content, entities, result)
            if section == "open_questions" and cited:
                self._check_answered(name, item, cited, by_id, events, result)
        self._check_recall(record, entities, rendered, result)
        self._check_commitments(record, events, result)

    def _check_relevance(
        self,
        name: str,
        item: Item,
        cited: list[str],
        content: dict[str, str],
        entities: list[Entity],
        result: ValidationResult,
    ) -> None:
        texts = [content[s] for s in cited]
        values = item_values(item, self.extractor, entities)
        which = ", ".join(cited)
        does = "does" if len(cited) == 1 else "do"
        verb = f"which {does}"
        for value in values:
            if not any(mentions(text, value) for text in texts):
                result.relevance_failures += 1
                result.problems.append(f"{name} cites {which}, {verb} not mention {value.value}")
        stated = {phrase for text in texts for phrase in deadlines(text)}
        for phrase in deadlines(item.text):
            if phrase not in stated:
                result.relevance_failures += 1
                result.problems.append(
                    f"{name} says {phrase!r}, but {which} {does} not say it; "
                    "state only deadlines the agent stated"
                )
        if not values:
            # Without identifiers, judge by content words; a source too short to have any
            # ("Yes, until six.") cannot be judged and is given the benefit of the doubt.
            terms = key_terms(item.text)
            source_terms = [key_terms(text) for text in texts]
            if terms and all(source_terms) and not any(terms & t for t in source_terms):
                result.relevance_failures += 1
                result.problems.append(f"{name} cites {which}, {verb} not support it")

    def _check_answered(
        self,
        name: str,
        item: Item,
        cited: list[str],
        by_id: dict[str, Event],
        events: list[Event],
        result: ValidationResult,
    ) -> None:
        values = {value for _, value, _, _ in self.extractor.from_text(item.text)}
        last = max(by_id[s].seq for s in cited)
        answer = answering_event(item.text, values, last, events)
        if answer is not None:
            result.problems.append(
                f"{name} is possibly answered in {answer}; move it to facts or commitments"
            )

    def _check_recall(
        self,
        record: HandoffRecord,
        entities: list[Entity],
        rendered: RenderedTranscript | None,
        result: ValidationResult,
    ) -> None:
        summary = record.all_text()
        visible = rendered.text if rendered is not None else None
        for entity in entities:
            if not entity.high_value or entity.sensitive:
                continue
            if visible is not None and not mentions(visible, entity):
                continue  # cut from the rendering: the model never saw it
            result.high_value.append(entity.value)
            if mentions(summary, entity):
                result.recalled.append(entity.value)
            else:
                result.problems.append(f"dropped entity {entity.value}")

    def _check_commitments(
        self, record: HandoffRecord, events: list[Event], result: ValidationResult
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
                result.problems.append(f'missing commitment from {promise.event_id}: "{quote}"')
