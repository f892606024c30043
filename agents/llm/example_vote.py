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
"crash" and "charg" (`agents.words` keys), each held by one agent, so tech support's share
is 2/3, billing's 1/3 and the front desk's 0; with `WEIGHT` 3 that adds 2.0, 1.0 and 0.0
nats to the model's log-probabilities of the three.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from agents.llm.routing_examples import content_words

WEIGHT = 3.0
"""Nats added to an agent whose words hold the whole message (its share times this)."""


def shares(message: str, known_by: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Each agent's share (0..1) of `message`'s weighted content words found in the
    texts it is known by (`known_by`: agent -> its description and examples). A word
    weighs log((n + 1) / (d + 1)) for n agents of which d hold it: nothing when all do."""
    words = {
        name: frozenset().union(*map(content_words, texts)) for name, texts in known_by.items()
    }
    asked = content_words(message)
    count = len(words)
    weight = {
        key: math.log((count + 1) / (sum(key in held for held in words.values()) + 1))
        for key in asked
    }
    total = sum(weight.values())
    if total <= 0:
        return dict.fromkeys(words, 0.0)
    return {name: sum(weight[key] for key in asked & held) / total for name, held in words.items()}


def fused(
    scores: Mapping[str, float], message: str, known_by: Mapping[str, Sequence[str]]
) -> dict[str, float]:
    """`scores` (log-probabilities over the options) with each voting agent's share times
    `WEIGHT` added; options that do not vote (tools) keep their score."""
    vote = shares(message, known_by) if message else {}
    return {name: score + WEIGHT * vote.get(name, 0.0) for name, score in scores.items()}
