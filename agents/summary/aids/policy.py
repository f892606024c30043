"""Small-model aids: the help a summary gets on a model that needs it, as one policy.

A hosted model writes a good record from the transcript alone; a small local one drops
values, cites the neighbouring turn and loops. `SmallModelAids` says which of the aids
one model gets (the bot decides per model):

- `checklist`: the values and promises the validator will demand follow the transcript;
- `complete_coverage`: after the draft, one short call per checklist line it missed,
  and a quote of its event for any value still missing (`agents.summary.aids.completion`);
- `ground_citations`: items copied from the instruction's worked example are dropped
  (`agents.summary.aids.example_copies`), value-bearing items are pointed at the events
  that hold their values, and items that only restate a masked secret are dropped
  (`agents.summary.aids.grounding`);
- `repetition_penalty`: damps repeats in models that loop.

The repairs run on the parsed draft, before validation; every change is counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.events import Event, Usage
from agents.models.base import GenerateConfig, Model
from agents.summary.aids.checklist import Checklist, build_checklist
from agents.summary.aids.completion import complete_record
from agents.summary.aids.example_copies import without_example_copies
from agents.summary.aids.grounding import ground_citations
from agents.summary.call import Ask
from agents.summary.entities import Entity, EntityExtractor
from agents.summary.record import HandoffRecord
from agents.summary.transcript import RenderedTranscript


@dataclass(frozen=True)
class Repaired:
    """A draft after the repairs: the record, items dropped as copies of the worked
    example, completed (by the model) and quoted (by code), grounded and withheld, and
    the usage of the completion calls."""

    record: HandoffRecord
    copied: int = 0
    completed: int = 0
    quoted: int = 0
    grounded: int = 0
    withheld: int = 0
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class SmallModelAids:
    """Which aids a summary model gets. The default is a hosted model's: the checklist
    only."""

    checklist: bool = True
    complete_coverage: bool = False
    ground_citations: bool = False
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
        copied = 0
        if self.ground_citations:
            # Before completion, so what the copies displaced is asked for or quoted.
            uncopied = without_example_copies(record, events, extractor)
            record, copied = uncopied.record, uncopied.dropped
        repaired = Repaired(record, copied=copied)
        if self.complete_coverage:
            config = GenerateConfig(temperature=0.0, repetition_penalty=self.repetition_penalty)
            done = await complete_record(
                ask, model, record, events, rendered, entities, config=config
            )
            repaired = Repaired(
                done.record,
                copied=copied,
                completed=done.added,
                quoted=done.quoted,
                usage=done.usage,
            )
        if self.ground_citations:
            grounded = ground_citations(
                repaired.record, events, extractor=extractor, entities=entities
            )
            repaired = Repaired(
                grounded.record,
                copied=repaired.copied,
                completed=repaired.completed,
                quoted=repaired.quoted,
                grounded=grounded.corrected_items,
                withheld=grounded.withheld_items,
                usage=repaired.usage,
            )
        return repaired
