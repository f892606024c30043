"""Typed validation problems: what is wrong, where, and the sentence the model reads.

The retry prompt and the metrics both key on `Problem.kind`, never on the wording of
`message`, so a message can be reworded without changing either.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ProblemKind(StrEnum):
    """A low-cardinality problem class; its value is the metrics label."""

    DROPPED_ENTITY = "dropped_entity"
    IRRELEVANT_SOURCE = "irrelevant_source"
    UNKNOWN_SOURCE = "unknown_source"
    NO_SOURCES = "no_sources"
    OVER_CITED = "over_cited"
    ANSWERED_QUESTION = "answered_question"
    MISSING_COMMITMENT = "missing_commitment"
    SENSITIVE_VALUE = "sensitive_value"
    UNSUPPORTED_GOAL = "unsupported_goal"
    LINK_IN_GOAL = "link_in_goal"
    LOOP = "loop"
    CUT_OFF = "cut_off"
    MODEL_ERROR = "model_error"
    MALFORMED = "malformed"
    NO_SESSION = "no_session"
    WINDOW_GAP = "window_gap"
    WINDOW_RETRIED = "window_retried"


@dataclass(frozen=True)
class Problem:
    """One finding. `where` holds the item path (`facts.2`) and/or the event ids it is
    about; `value` is the value a problem is about (the dropped entity), when there is
    one. `str(problem)` is its message, the sentence the model and people read."""

    kind: ProblemKind
    where: tuple[str, ...]
    message: str
    value: str = ""

    def __str__(self) -> str:
        return self.message
