"""Which retrieved sections can answer a question, by the words they share with it.

A question the documents do not cover shares a word or two with many sections, but
rarely most of its words with the best one; a section that answers it shares several.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agents.knowledge.search import KnowledgeHit
from agents.words import STOPWORDS, key, without_currency, words

# A section shares at least this many of a question's words to count as relevant (fewer
# when the question has fewer), and at least a third of them.
MIN_SHARED_WORDS = 2
# The best section holds at least this share of the question's words, or none is relevant.
BEST_SHARE = 0.5


def relevant(hits: Sequence[KnowledgeHit], question: str) -> list[KnowledgeHit]:
    """The hits that can answer the question. The best hit must hold half the question's
    words with no digit in them (`BEST_SHARE`; the customer's own numbers are in no
    document), or one of its words with digits (an error code it documents), else none
    can: a question the documents do not cover shares a
    word or two with many sections, but rarely most of its words with the best one. Each
    hit kept holds `MIN_SHARED_WORDS` of them (or all, for a shorter question) and a
    third."""
    asked = question_keys(question)
    if not asked or not hits:
        return []

    def shared(hit: KnowledgeHit) -> int:
        return len(asked & _held(hit))

    named = {k for k in asked if not any(c.isdigit() for c in k)} or asked
    best = min(len(named), max(MIN_SHARED_WORDS, math.ceil(len(named) * BEST_SHARE)))
    top = _held(hits[0])
    # An identifier the best section also writes (an error code, a form name) names the
    # question's subject, however the rest of it is worded.
    if not (asked - named) & top and len(named & top) < best:
        return []
    need = min(len(asked), max(MIN_SHARED_WORDS, math.ceil(len(asked) / 3)))
    return [h for h in hits if shared(h) >= need]


def mentioning(hits: Sequence[KnowledgeHit], question: str) -> list[KnowledgeHit]:
    """The hits that hold one of `question`'s topic words (all of them when it has none)."""
    asked = question_keys(question)
    return [h for h in hits if not asked or asked & _held(h)]


def _held(hit: KnowledgeHit) -> set[str]:
    return {key(w) for w in words(f"{hit.title} {hit.heading} {hit.text}")}


def question_keys(question: str) -> set[str]:
    """The words of `question` that name its topic (short numbers, like cents, and the
    currency of an amount do not)."""
    return {
        key(w)
        for w in words(without_currency(question))
        if w not in STOPWORDS and not (w.isdigit() and len(w) < 3)
    }
