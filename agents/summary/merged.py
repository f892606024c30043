"""The merged record of a thread's passing windows, checked once more over the events
they cover, and what happens when that check fails.

Each window's record passed over its own events; the merged record is checked over all
of them, so a value can fail there that no window's check saw (an item whose words
mention another window's value, a value a later window marks as secret). Items that
fail alone are dropped, never rewritten. If the record still fails, the windows whose
events the problems name are taken out, as gaps with those problems (their events are
then linked or carried raw, as every gap's are), and the rest is merged and checked
again: one window's cross-window problem never costs the whole thread its record.
Nothing unchecked is shown: when no window is left, there is no record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from agents.events import Event
from agents.summary.checks.validator import ValidationResult, Validator
from agents.summary.entities import EntityExtractor
from agents.summary.merge import merge_records, without_items
from agents.summary.problems import Problem
from agents.summary.record import SECTIONS, HandoffRecord
from agents.summary.transcript import RenderedTranscript, joined
from agents.summary.windows import StoredWindow

MERGED = "merged record: "


@dataclass(frozen=True)
class MergeOutcome:
    """The checked record (None when no window could be kept), the windows as the
    record holds them (a window the merged check failed is now a gap naming why), and
    the last failing check's problems (empty when `record` is not None)."""

    record: HandoffRecord | None
    windows: list[StoredWindow]
    problems: list[Problem] = field(default_factory=list)


@dataclass(frozen=True)
class WindowMerge:
    """How a thread's windows are merged and checked: `events_of` gives a window's
    events, `thread` every summarised event (the goal may rest on any of them),
    `rendering` what a window's model was shown of its events."""

    events_of: Callable[[StoredWindow], list[Event]]
    thread: Sequence[Event]
    validator: Validator
    extractor: EntityExtractor
    rendering: Callable[[list[Event]], RenderedTranscript]

    def __call__(self, windows: Sequence[StoredWindow]) -> MergeOutcome:
        """Merge the records of `windows` (in event order; gaps are kept as they are),
        checking the result over the events of the windows kept."""
        events = {w.span: self.events_of(w) for w in windows if w.record is not None}
        current = list(windows)
        problems: list[Problem] = []
        while any(w.record is not None for w in current):
            passed = [w for w in current if w.record is not None]
            record, checked = self._once(passed, [events[w.span] for w in passed])
            if checked.passed:
                return MergeOutcome(record, current)
            problems = [replace(p, message=MERGED + p.message) for p in checked.problems]
            named = _named_events(record, checked.problems)
            culprits = {w.span for w in passed if any(e.id in named for e in events[w.span])}
            if not culprits:
                break
            current = [
                _demoted(w, events[w.span], record, problems) if w.span in culprits else w
                for w in current
            ]
        return MergeOutcome(None, current, problems)

    def _once(
        self, passed: list[StoredWindow], per_window: list[list[Event]]
    ) -> tuple[HandoffRecord, ValidationResult]:
        covered = [e for events in per_window for e in events]
        # The goal cites nothing: the whole thread supports it, gaps included.
        seen = {e.id for e in covered}
        rest = [e for e in self.thread if e.id not in seen]
        records = [HandoffRecord.model_validate(w.record) for w in passed]
        # What each window's model was shown, together: a value cut from a window's
        # transcript (a long payload's tail) was demanded of no window, so the merged
        # record is not failed for it either.
        shown = joined([self.rendering(events) for events in per_window])

        def check(record: HandoffRecord) -> ValidationResult:
            return self.validator.check(
                ValidationResult(record=record), covered, rendered=shown, goal_support=rest
            )

        merged = merge_records(
            records, covered, extractor=self.extractor, check=lambda r: check(r).problems
        )
        checked = check(merged)
        named = {p.where[0] for p in checked.problems if p.where and "." in p.where[0]}
        if named and all(p.where and p.where[0] in named for p in checked.problems):
            # Only items are wrong, each over the whole thread: drop them, never add text.
            dropped = without_items(merged, named)
            again = check(dropped)
            if again.passed:
                return dropped, again
        return merged, checked


def _named_events(record: HandoffRecord, problems: Sequence[Problem]) -> set[str]:
    """The event ids `problems` name: directly, or as the sources of the items they name
    ("facts.2", 1-based)."""
    named: set[str] = set()
    for problem in problems:
        for where in problem.where:
            section, _, number = where.partition(".")
            if section in SECTIONS and number.isdigit():
                items = getattr(record, section)
                if 0 < int(number) <= len(items):
                    named.update(items[int(number) - 1].sources)
            else:
                named.add(where)
    return named


def _demoted(
    window: StoredWindow, events: list[Event], record: HandoffRecord, problems: list[Problem]
) -> StoredWindow:
    """`window` as a gap, with the merged problems that name its events first."""
    ids = {e.id for e in events}
    own = [str(p) for p in problems if ids & _named_events(record, [p])]
    return replace(window, status="gap", record=None, problems=(*own, *window.problems))
