"""The goal's checks: it heads the digest and its notification, so it is validated like
every item, and more strictly.

The goal cites nothing, so its support is the whole transcript: each value and deadline
it states must be in some event. It holds no link in any form a reader or a chat client would
follow, because nothing a link points at can be validated.
"""

from __future__ import annotations

import re

from agents.summary.aids.grounding import item_values
from agents.summary.checks.coverage import deadlines
from agents.summary.entities import Entity, EntityExtractor, mentions
from agents.summary.problems import Problem, ProblemKind
from agents.summary.record import Item

# A scheme, `www.`, or a host and a path ("evil.example/claim").
LINK = re.compile(
    r"(?i)\b(?:https?://|www\.|mailto:)\S+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/\S*"
)
WHERE = ("goal",)


def goal_problems(
    goal: str, texts: list[str], extractor: EntityExtractor, entities: list[Entity]
) -> list[Problem]:
    """What is wrong with `goal`, given every event's content `texts`."""
    problems = [
        Problem(
            ProblemKind.UNSUPPORTED_GOAL,
            WHERE,
            f"the goal says {value.value}, which no event mentions; state only what the "
            "transcript says",
            value.value,
        )
        for value in item_values(Item(text=goal), extractor, entities)
        if not any(mentions(text, value) for text in texts)
    ]
    stated = {phrase for text in texts for phrase in deadlines(text)}
    problems += [
        Problem(
            ProblemKind.UNSUPPORTED_GOAL,
            WHERE,
            f"the goal says {phrase!r}, which no event says",
            phrase,
        )
        for phrase in deadlines(goal)
        if phrase not in stated
    ]
    problems += [
        Problem(
            ProblemKind.LINK_IN_GOAL,
            WHERE,
            f"the goal holds a link ({link[:60]}); state the goal in words, without links",
            link,
        )
        for link in LINK.findall(goal)
    ]
    return problems
