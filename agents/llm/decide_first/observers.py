"""Watching decisions as they are made: evaluations time them and count pretend replies."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from agents.llm.decide_first.choices import ChoiceKind
from agents.llm.decide_first.pretend_actions import PretendAction


@dataclass(frozen=True)
class Decision:
    """One decision as observed by `observe_decisions`: who chose what, how fast, and
    what the model chose before the examples' vote (`agents.llm.example_vote`)."""

    agent: str
    choice: str
    kind: ChoiceKind
    seconds: float
    unvoted: str = ""


@dataclass
class Observers:
    """Who is told of decisions and of pretend replies in the current context."""

    decisions: list[Callable[[Decision], None]] = field(default_factory=list)
    pretend: list[Callable[[str, PretendAction], None]] = field(default_factory=list)


current_observers: ContextVar[Observers | None] = ContextVar("decision_observers", default=None)


@contextmanager
def observe_decisions(
    on_decision: Callable[[Decision], None],
    on_pretend: Callable[[str, PretendAction], None] | None = None,
) -> Iterator[None]:
    """Call `on_decision` for every decision (and `on_pretend` for every pretend reply
    caught) made in this context; evaluations use it to time decisions."""
    observers = Observers([on_decision], [on_pretend] if on_pretend else [])
    token = current_observers.set(observers)
    try:
        yield
    finally:
        current_observers.reset(token)
