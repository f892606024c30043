"""A validator that decides as one validator and scores first answers with another."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agents.events import Event
from agents.summary.checks.validator import ValidationResult, Validator
from agents.summary.entities import Entity
from agents.summary.problems import Problem
from agents.summary.transcript import RenderedTranscript


class ShadowValidator(Validator):
    """Decides as `primary` does, and scores each summary's first answer with `shadow`
    too (the seed's validator, for side-by-side runs); `take()` hands over that verdict.

    The shadow sees the same answer: parsed its own way, checked on the record the
    primary checks (after the same repairs) when both parsed.
    """

    def __init__(self, primary: Validator, shadow: Validator) -> None:
        super().__init__(
            strict=primary.strict, extractor=primary.extractor, max_sources=primary.max_sources
        )
        self.primary = primary
        self.shadow = shadow
        self._parsed: ValidationResult | None = None
        self._first: list[Problem] | None = None

    def parse(self, text: str, *, finish_reason: str | None = None) -> ValidationResult:
        if self._first is None and self._parsed is None:
            self._parsed = self.shadow.parse(text, finish_reason=finish_reason)
        return self.primary.parse(text, finish_reason=finish_reason)

    def check(
        self,
        parsed: ValidationResult,
        events: list[Event],
        *,
        rendered: RenderedTranscript | None = None,
        entities: list[Entity] | None = None,
        goal_support: Sequence[Event] = (),
    ) -> ValidationResult:
        if self._parsed is not None:
            own = self._parsed
            if own.record is not None and parsed.record is not None:
                own = replace(own, record=parsed.record)
            checked = self.shadow.check(own, events, rendered=rendered, entities=entities)
            self._first, self._parsed = list(checked.problems), None
        return self.primary.check(
            parsed, events, rendered=rendered, entities=entities, goal_support=goal_support
        )

    def take(self) -> list[Problem] | None:
        """The shadow's problems with the last summary's first answer (None when no
        answer came), and a fresh start for the next summary."""
        first, self._first, self._parsed = self._first, None, None
        return first
