"""Scoring a decide-first choice by the model's log-probabilities, with a calibration.

A small model answering a constrained choice greedily leans on one option whatever the
message says (on the embedded Qwen 1.5B: the agent's own answer, and the option listed
first). Its log-probabilities still rank the options by the message: so a decision asks
for the top alternatives at each answer token (`GenerateConfig.top_logprobs`) and scores
each option by the probability the model gives to starting its name (every alternative
token that begins the name counts, "bill" and "billing" alike). With `calibrated`
scoring, each option's score is divided by the same option's probability for a
content-free message ("N/A", asked once per agent and set of options and kept), the
contextual calibration of Zhao et al., *Calibrate Before Use* (ICML 2021): what is left
is how much the message itself moved the model towards each option, so the option the
model favours for any input no longer wins by default.

Options whose names start alike get the same score from the first token; the greedy
answer breaks such a tie. A server that gives no log-probabilities leaves the greedy
answer as it is.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence

from agents.models.base import TokenLogprobs

__all__ = [
    "PRIORS",
    "calibrated",
    "log_softmax",
    "option_scores",
    "pick",
]
TOP_LOGPROBS = 20
"""Alternatives asked for per answer token: enough to see every option of a small tree."""
CONTENT_FREE = "N/A"
"""The customer message of a calibration request: it says nothing about any option."""
_QUOTES = ' \t\n"'
_PRIORS_KEPT = 256


def option_scores(
    logprobs: Sequence[TokenLogprobs], names: Sequence[str], *, key: str | None = None
) -> dict[str, float] | None:
    """Each option's log-probability of being started, at the first answer token that
    begins a name (after the JSON string's opening quote; with `key`, the answer is an
    object and the name is the value of that field); None without log-probabilities.
    An option none of the alternatives begins gets the least listed probability: at most
    that, as far as the model's top alternatives tell."""
    position = _name_position(logprobs, key)
    if position is None:
        return None
    top = logprobs[position].top
    if not top:
        return None
    floor = min(top.values())
    scores: dict[str, float] = {}
    for name in names:
        mass = [
            math.exp(logprob)
            for token, logprob in top.items()
            if (piece := token.lstrip(_QUOTES)) and name.startswith(piece)
        ]
        scores[name] = math.log(sum(mass)) if mass else floor
    return scores


def _name_position(logprobs: Sequence[TokenLogprobs], key: str | None = None) -> int | None:
    start = 0
    if key is not None:  # the first token after `"key":`
        seen = ""
        start = len(logprobs)
        for index, token in enumerate(logprobs):
            seen += token.token
            if f'"{key}"' in seen and ":" in seen.split(f'"{key}"', 1)[1]:
                start = index + 1
                break
    for index in range(start, len(logprobs)):
        if logprobs[index].token.strip(_QUOTES):
            return index
    return None


def log_softmax(scores: dict[str, float]) -> dict[str, float]:
    """`scores` as log-probabilities over these options alone (they sum to one), so the
    scores of two differently asked decisions can be added."""
    top = max(scores.values())
    total = top + math.log(sum(math.exp(score - top) for score in scores.values()))
    return {name: score - total for name, score in scores.items()}


def pick(scores: dict[str, float], greedy: str) -> str:
    """The best-scored option; among options scored alike, the greedy answer if it is one
    of them."""
    best = max(scores.values())
    tied = [name for name, score in scores.items() if math.isclose(score, best, abs_tol=1e-9)]
    return greedy if greedy in tied else tied[0]


def calibrated(scores: dict[str, float], prior: dict[str, float] | None) -> dict[str, float]:
    """Each score less the same option's `prior` (a log-probability division): how much
    the message itself moved the model towards each option."""
    return {name: score - (prior or {}).get(name, 0.0) for name, score in scores.items()}


class Priors:
    """Content-free option scores, kept per request prompt and options (bounded)."""

    def __init__(self, size: int = _PRIORS_KEPT) -> None:
        self._kept: OrderedDict[tuple[str, tuple[str, ...]], dict[str, float]] = OrderedDict()
        self._size = size

    def get(self, prompt: str, names: Sequence[str]) -> dict[str, float] | None:
        """The kept prior for this prompt and these options, if any."""
        key = (prompt, tuple(names))
        found = self._kept.get(key)
        if found is not None:
            self._kept.move_to_end(key)
        return found

    def clear(self) -> None:
        """Forget every kept prior (a tree or a model changed)."""
        self._kept.clear()

    def put(self, prompt: str, names: Sequence[str], scores: dict[str, float]) -> None:
        """Keep `scores` as the prior for this prompt and these options."""
        self._kept[(prompt, tuple(names))] = scores
        while len(self._kept) > self._size:
            self._kept.popitem(last=False)


PRIORS = Priors()
"""The process's priors: a calibration call is made once per agent prompt and options."""
