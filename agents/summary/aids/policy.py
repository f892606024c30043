"""Small-model aids: the help a summary gets on a model that needs it, as one policy.

A hosted model writes a good record from the transcript alone; a small local one drops
values, cites the neighbouring turn and loops. `SmallModelAids` says which of the aids
one model gets (the bot decides per model):

- `checklist`: the values and promises the validator will demand follow the transcript;
- `complete_coverage`: after the draft, one short call per checklist line it missed,
  and a quote of its event for any value still missing (`agents.summary.aids.completion`);
- `ground_citations`: items copied from the instruction's worked example are dropped
  (`agents.summary.aids.example_copies`), items without values whose citations do not
  support them are re-cited to the events that do, or dropped, and items stating a value
  no event holds are dropped (`agents.summary.aids.recitation`), open questions a later
  agent turn answers are moved to facts (`agents.summary.aids.answered_questions`),
  value-bearing items are pointed at the events that hold their values, and items that
  only restate a masked secret are dropped (`agents.summary.aids.grounding`);
- `repetition_penalty`: damps repeats in models that loop.

The repairs run on the parsed draft, before validation; every change is counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from agents.events import Event, Usage
from agents.models.base import GenerateConfig, Model
from agents.summary.aids.answered_questions import move_answered_questions
from agents.summary.aids.checklist import Checklist, build_checklist
from agents.summary.aids.completion import complete_record
from agents.summary.aids.example_copies import without_example_copies
from agents.summary.aids.grounding import ground_citations
from agents.summary.aids.recitation import recite_unsupported
from agents.summary.call import Ask
from agents.summary.entities import Entity, EntityExtractor
from agents.summary.record import HandoffRecord
from agents.summary.transcript import RenderedTranscript


@dataclass(frozen=True)
class Repaired:
    """A draft after the repairs: the record, items dropped as copies of the worked
    example, items without values re-cited and dropped as unsupported, open questions
    moved to facts as answered (or dropped), items completed (by the model) and quoted
    (by code), grounded and withheld, and the usage of the completion calls."""

    record: HandoffRecord
    copied: int = 0
    recited: int = 0
    unsupported: int = 0
    answered: int = 0
    completed: int = 0
    quoted: int = 0
    grounded: int = 0
    withheld: int = 0
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class SmallModelAids:
    """Which aids a summary model gets. The default is the shipped configuration for a
    hosted model: the checklist and the deterministic citation repairs
    (`SUMMARY_GROUND_CITATIONS`, on by default), no completion calls."""

    checklist: bool = True
    complete_coverage: bool = False
    ground_citations: bool = True
    repetition_penalty: float | None = None

    def plan(
        self, events: list[Event], entities: list[Entity], rendered: RenderedTranscript
    ) -> Checklist:
        """The checklist that follows the transcript (empty when switched off)."""
        if not self.checklist:
            return Checklist()
        return build_checklist(events, entities, visible=rendered.text)

    async def repair(
        self,
        record: HandoffRecord,
        *,
        ask: Ask,
        model: Model | str,
        events: list[Event],
        rendered: RenderedTranscript,
        entities: list[Entity],
        extractor: EntityExtractor,
    ) -> Repaired:
        """The draft with its gaps filled and its citations grounded, as switched on; a
        new record, the draft itself is left as it is."""
        before = Repaired(record)
        if self.ground_citations:
            # Before completion, so what a dropped item displaced is asked for or quoted.
            before = _before_completion(record, events, entities, extractor)
        record = before.record
        repaired = before
        if self.complete_coverage:
            config = GenerateConfig(temperature=0.0, repetition_penalty=self.repetition_penalty)
            done = await complete_record(
                ask, model, record, events, rendered, entities, config=config, extractor=extractor
            )
            repaired = replace(
                before,
                record=done.record,
                completed=done.added,
                quoted=done.quoted,
                usage=done.usage,
            )
        if self.ground_citations:
            grounded = ground_citations(
                repaired.record, events, extractor=extractor, entities=entities
            )
            # Grounding may re-point a question to an earlier event that a later turn
            # answers: moved too, never dropped (no completion follows to quote its values).
            answered = move_answered_questions(
                grounded.record, events, extractor=extractor, entities=entities, drop=False
            )
            repaired = replace(
                repaired,
                record=answered.record,
                answered=repaired.answered + answered.moved,
                grounded=grounded.corrected_items,
                withheld=grounded.withheld_items,
            )
        return repaired


def _before_completion(
    record: HandoffRecord, events: list[Event], entities: list[Entity], extractor: EntityExtractor
) -> Repaired:
    """The deterministic drops and moves that precede completion: copies of the worked
    example, items without values re-cited or dropped, answered questions moved."""
    uncopied = without_example_copies(record, events, extractor)
    recited = recite_unsupported(uncopied.record, events, extractor=extractor, entities=entities)
    answered = move_answered_questions(
        recited.record, events, extractor=extractor, entities=entities
    )
    return Repaired(
        answered.record,
        copied=uncopied.dropped,
        recited=recited.recited,
        unsupported=recited.dropped,
        answered=answered.moved + answered.dropped,
    )
