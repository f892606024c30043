"""The goal's checks: it heads the digest and its notification, so it is validated like
every item, and more strictly.

The goal cites nothing, so its support is the whole transcript: each value, deadline and
domain name it states must be in some event, and so must each acronym and each word of
standing (approval, authority, entitlement, urgency) it uses, so that a goal cannot bring
a claim of its own ("claim at acme-refunds.com", "pre-approved by the CFO"). Other words
may paraphrase: a goal says what is wanted in its own words. It holds no link in any form a
reader or a chat client would follow, because nothing a link points at can be validated.
"""

from __future__ import annotations

import re

from agents.summary.aids.grounding import item_values
from agents.summary.checks.coverage import deadlines, key_terms
from agents.summary.entities import Entity, EntityExtractor, mentions
from agents.summary.problems import Problem, ProblemKind
from agents.summary.record import Item

# A scheme, `www.`, or a host and a path ("evil.example/claim").
LINK = re.compile(
    r"(?i)\b(?:https?://|www\.|mailto:)\S+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/\S*"
)
# A host name without a scheme or path ("acme-refunds.com"), which chat clients link too.
DOMAIN = re.compile(
    r"(?i)(?<![\w@.-])(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,24}\b(?![.-]\w)"
)
ACRONYM = re.compile(r"\b[A-Z]{2,6}\b")
# Words that give a request standing a reader acts on, as 5-letter stems (`key_terms`).
STANDING = frozenset(
    "appro pre-a autho guara promi entit eligi exemp waive waivi legal urgen escal".split()
)
WHERE = ("goal",)


def claim_terms(text: str) -> dict[str, str]:
    """The acronyms and words of standing in `text`: each one's lower-cased key (a word's
    stem) and the word as written."""
    found = {a.lower(): a for a in ACRONYM.findall(text)}
    for word in re.findall(r"[A-Za-z][A-Za-z'-]{3,}", text):
        stem = word.lower()[:5]
        if stem in STANDING:
            found.setdefault(stem, word)
    return found


def _text_terms(text: str) -> set[str]:
    words = {w.lower() for w in re.findall(r"\b[A-Za-z]{2,6}\b", text)}
    return key_terms(text) | words


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
    said = set().union(*(_text_terms(text) for text in texts)) if texts else set()
    problems += [
        Problem(
            ProblemKind.UNSUPPORTED_GOAL,
            WHERE,
            # Not quoted: the word may be an injection the transcript fences, and this
            # message goes to the model outside that fence.
            "the goal claims a standing (an approval, an authority, a guarantee, urgency) or "
            "names an acronym that no event states; state only what the transcript says",
            word,
        )
        for key, word in sorted(claim_terms(_without_links(goal)).items())
        if key not in said
    ]
    problems += [
        Problem(
            ProblemKind.UNSUPPORTED_GOAL,
            WHERE,
            f"the goal names {domain}, which no event mentions; state only what the "
            "transcript says",
            domain,
        )
        for domain in DOMAIN.findall(_without_links(goal))
        if not any(domain.lower() in text.lower() for text in texts)
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


def _without_links(goal: str) -> str:
    return LINK.sub(" ", goal)
