"""Ranking knowledge sections: the query's terms, and a re-ranking over the candidates.

Either backend (SQLite FTS5, PostgreSQL full-text search) returns its best candidate
sections for the OR of the query's terms, scored with title and heading above body. The
final order is computed here, in Python, the same for both backends: each candidate's
backend score (scaled to the best candidate's), how much of the query its heading and
title cover, and how strongly its whole document matches (a document whose several
sections match is more likely the right one than a single stray section elsewhere).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agents.knowledge.search import KnowledgeHit

# How many candidates a backend returns for re-ranking.
CANDIDATES = 60

_WORD = re.compile(r"[a-z0-9]+")
# Function words and the wording of questions ("how do I", "can you tell me"): they match
# every section and would drown the words that name the topic.
STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be been before being
    between both but by can could did do does doing done during each either else for from
    further get gets getting got had has have having he her here hers him his how i if in
    into is it its itself just let me mine more most my myself no nor not now of off on
    once only or other our ours out over own please same she should so some such tell than
    that the their theirs them then there these they this those through to too under until
    up very want was we were what when where which while who whom why will with would you
    your yours yourself hello hi thanks thank know like need wondering question explain
    help ask regarding s t ll ve re d m""".split()
)


@dataclass(frozen=True)
class Weights:
    """How the re-ranking mixes its signals (see the module docstring)."""

    heading: float = 0.6
    title: float = 0.3
    document: float = 0.5


def stem(word: str) -> str:
    """A light English suffix stripper, enough to match "refunds" to "refund" and
    "charged" to "charge" when comparing the query with headings and titles."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + keep
    return word


def words(text: str) -> list[str]:
    """Lower-case alphanumeric words of `text`."""
    return _WORD.findall(text.lower())


def query_terms(query: str) -> list[str]:
    """The query's distinct content words, in order (stopwords dropped; every word
    when the query has nothing else)."""
    all_words = list(dict.fromkeys(words(query)))
    content = [w for w in all_words if w not in STOPWORDS]
    return content or all_words


def rerank(
    candidates: Sequence[KnowledgeHit],
    terms: Sequence[str],
    *,
    limit: int,
    weights: Weights | None = None,
) -> list[KnowledgeHit]:
    """The best `limit` of `candidates` (backend scores, higher is better), re-scored."""
    if not candidates or not terms:
        return list(candidates)[:limit]
    weights = weights or Weights()
    stems = {stem(t) for t in terms}
    best = max(c.score for c in candidates) or 1.0
    base = {c.id: c.score / best for c in candidates}
    per_doc: dict[str, list[float]] = {}
    for c in candidates:
        per_doc.setdefault(c.doc_id, []).append(base[c.id])
    doc_strength = {doc: _aggregate(scores) for doc, scores in per_doc.items()}
    top_doc = max(doc_strength.values()) or 1.0

    def score(c: KnowledgeHit) -> float:
        return (
            base[c.id]
            + weights.heading * _coverage(c.heading, stems)
            + weights.title * _coverage(c.title, stems)
            + weights.document * doc_strength[c.doc_id] / top_doc
        )

    rescored = [replace(c, score=round(score(c), 4)) for c in candidates]
    rescored.sort(key=lambda c: -c.score)
    return rescored[:limit]


def _coverage(text: str, stems: set[str]) -> float:
    """The share of the query's stems that occur in `text`."""
    found = {stem(w) for w in words(text)} & stems
    return len(found) / len(stems)


def _aggregate(scores: list[float]) -> float:
    """A document's strength: its best section, plus a little for each other match."""
    ordered = sorted(scores, reverse=True)
    return ordered[0] + 0.25 * sum(ordered[1:3])
