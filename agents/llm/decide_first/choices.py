"""The options of a decision, and reading the model's choice among them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

ChoiceKind = Literal["answer", "transfer", "tool"]
YES, NO = "yes", "no"
"""The two options of a yes/no check (the consult check of `agents.llm.decide_first.review`)."""


@dataclass(frozen=True)
class Choice:
    """One option of a decision: `name` is the enum value the model picks."""

    name: str
    kind: ChoiceKind
    description: str


def parse_choice(text: str, choices: Sequence[Choice]) -> Choice:
    """The chosen option; an answer that is not one of them picks the first option named
    in it, else the agent itself (answer) when that is an option, else the first."""
    by_name = {c.name: c for c in choices}
    try:
        picked = json.loads(text)
    except json.JSONDecodeError:
        picked = None
    if isinstance(picked, dict):  # an object answer (a layout's, or a server's that insists)
        picked = picked.get("choice", picked.get("name"))
    if isinstance(picked, str) and picked in by_name:
        return by_name[picked]
    named = [c for c in choices if c.name in text]
    if named:
        return named[0]
    return next((c for c in choices if c.kind == "answer"), choices[0])
