"""Routing examples: the few requests a tree declares per agent (`examples:` in YAML).

A team teaches the router with a handful of requests in its customers' words instead of
rewording descriptions until a test passes. Every model sees them the same way: a
target's description as a model reads it (`described`) is its description followed by
its examples, so they reach the decide-first options (both layouts) and the transfer
instruction of a model that calls tools natively.

`closest_examples` ranks the declared examples by how many content words they share
with a message: the routing evaluation shows it beside each miss, so a team sees which
example, if any, pulled the message its way or would have needed a neighbour.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from agents.words import STOPWORDS, key, words

if TYPE_CHECKING:
    from agents.base_agent import BaseAgent


class Routable(Protocol):
    """What routing reads of an agent: its description and declared examples."""

    @property
    def description(self) -> str: ...

    @property
    def examples(self) -> Sequence[str]: ...


def described(agent: Routable) -> str:
    """`agent`'s description as a routing model reads it: its description, then its
    examples as quoted requests (the description alone when it declares none)."""
    description = agent.description or "(no description)"
    if not agent.examples:
        return description
    quoted = "; ".join(f'"{example}"' for example in agent.examples)
    return f"{description} Requests it handles, for example: {quoted}."


SOCIAL_WORDS = frozenset({"hello", "hi", "thanks", "thank"})
"""Greetings and thanks. Knowledge search drops them (they match every section), and so
does routing in a message about something else ("Hello, I was charged twice"); but a
message that is nothing else ("hi there", "thanks!") is about them."""


def content_words(text: str) -> frozenset[str]:
    """The words of `text` that carry its topic, compared as knowledge search compares
    them (`agents.words`), so "updates" meets "updating"; numbers do not count (an order
    or invoice number names no agent's area), and greetings and thanks count only in a
    text that says nothing else (`SOCIAL_WORDS`)."""
    found = [w for w in words(text) if not w.isdigit()]
    topic = frozenset(key(w) for w in found if w not in STOPWORDS)
    return topic or frozenset(key(w) for w in found if w in SOCIAL_WORDS)


def known_words(text: str) -> frozenset[str]:
    """The words an agent's description or example gives it: its content words and any
    greetings and thanks in it, wherever they stand ("Thanks a lot, goodbye!" makes
    its agent the one a bare "thank you" belongs to)."""
    social = frozenset(key(w) for w in words(text) if w in SOCIAL_WORDS)
    return content_words(text) | social


def similarity(message: str, example: str) -> float:
    """The share of the smaller word set the two texts have in common (0..1)."""
    ours, theirs = content_words(message), content_words(example)
    if not ours or not theirs:
        return 0.0
    return len(ours & theirs) / min(len(ours), len(theirs))


@dataclass(frozen=True)
class NearExample:
    """A declared example and how close it is to a message."""

    agent: str
    example: str
    score: float


def closest_examples(
    message: str, agents: Iterable[BaseAgent], *, limit: int = 2
) -> list[NearExample]:
    """The declared examples of `agents` that share words with `message`, closest first
    (at most `limit`); empty when none shares any."""
    found = [
        NearExample(agent.name, example, similarity(message, example))
        for agent in agents
        for example in agent.examples
    ]
    ranked = sorted((n for n in found if n.score > 0), key=lambda n: -n.score)
    return ranked[:limit]
