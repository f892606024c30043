"""The examples' vote: how much of a message the words each agent is known by account for.

A decision between agents (the transfer targets and the agent's own answer) asks the
model, and the model reads each agent's description and examples (`routing_examples`).
A small model still files a message by a word it weighs wrongly. The vote is a second
opinion that costs no model call: each agent is known by its description and its declared
examples, and scores the share of the message's content words (`agents.words`) that its
own words contain, each word weighted by how few agents it names ("refund" says more when
one agent's words hold it than when all do; a word no agent holds counts against every
one, so a message about something else moves no agent up). The decision adds `WEIGHT`
times each share to the model's log-probability of that agent (`agents.llm.decide_first
.decision`), so a team's examples steer a close call without overruling a sure one.

Example: three agents known by these words,

    billing: "Refunds and invoices." / "You charged me twice."
    tech:    "Errors, crashes, installing." / "The app crashes on start."
    front:   "Greetings and orders." / "Hi there!"

and the message "the app crashed after I was charged": its content words are "app",
"crash" and "charg" (`agents.words` keys), each held by one agent (log 2 each), and the
message counts one unknown word more (log 4), so tech support's share is 2/5, billing's
1/5 and the front desk's 0; with `WEIGHT` 3 that adds 1.2, 0.6 and 0 nats to the model's
log-probabilities of the three.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from agents.llm.routing_examples import content_words, known_words

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_DISOWNING = re.compile(r"not\b|never\b", re.IGNORECASE)

WEIGHT = 3.0
"""Nats added to an agent whose words hold the whole message (its share times this)."""


def known_texts(name: str, description: str, examples: Sequence[str]) -> tuple[str, ...]:
    """The texts an agent is known by in the vote: its name's words ("billing_agent"
    says "billing"), the areas its description says it owns (`owned`), its examples."""
    return (name.replace("_", " "), owned(description), *examples)


def owned(description: str) -> str:
    """`description` without its sentences that say what the agent does not own ("Not
    software problems and not deliveries."): their words name other agents' areas."""
    kept = [s for s in _SENTENCE_END.split(description.strip()) if not _DISOWNING.match(s)]
    return " ".join(kept)


def shares(message: str, known_by: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Each agent's share (0..1) of `message`'s weighted content words found in the
    texts it is known by (`known_by`: agent -> its texts: name, description, examples).
    A word weighs log((n + 1) / (d + 1)) for n agents of which d hold it: nothing when all
    do, the most when none does. The message counts one such unknown word more than it
    has, so a short message that shares one word is not wholly that agent's."""
    words = {name: frozenset().union(*map(known_words, texts)) for name, texts in known_by.items()}
    asked = content_words(message)
    count = len(words)
    weight = {
        key: math.log((count + 1) / (sum(key in held for held in words.values()) + 1))
        for key in asked
    }
    total = sum(weight.values()) + math.log(count + 1)
    return {name: sum(weight[key] for key in asked & held) / total for name, held in words.items()}


def fused(
    scores: Mapping[str, float], message: str, known_by: Mapping[str, Sequence[str]]
) -> dict[str, float]:
    """`scores` (log-probabilities over the options) with each voting agent's share times
    `WEIGHT` added; options that do not vote (tools) keep their score."""
    vote = shares(message, known_by) if message else {}
    return {name: score + WEIGHT * vote.get(name, 0.0) for name, score in scores.items()}
