"""Ranking knowledge sections: the query's terms, and a re-ranking of the candidates.

Either backend (SQLite FTS5, PostgreSQL full-text search) returns candidate sections for
the OR of the query's terms, and counts how many sections hold each term. The final
order is computed here, the same for both backends:

- BM25F over each candidate's title, heading and body (title and heading weighted above
  the body), with the backend's corpus-wide document frequencies;
- how alike the heading and the question are, every word counted (FAQ headings often
  restate the question: "How can I get new plates?");
- how strongly the candidate's whole document matches: a document with several matching
  sections is more likely the right one than a stray section of another;
- the document's opening section gets a share of that strength: a page's opening states
  what the page is about, so a question that matches the page as a whole is likeliest
  answered there, rather than in a later section that shares a word or two with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from agents.knowledge.search import KnowledgeHit
from agents.words import key, words

# How many candidates a backend returns for re-ranking.
CANDIDATES = 80
# A term in more than this share of the sections is common: it still scores candidates,
# but does not make them (Lucene's "common terms" query). Matching on it made the backend
# rank most of the index for every question that used a frequent word.
COMMON_SHARE = 0.2


@dataclass(frozen=True)
class CorpusStats:
    """What BM25 needs from the whole index: the section count, each term's document
    frequency (sections holding it), and the fields' average lengths in characters."""

    sections: int
    doc_freq: Mapping[str, int]
    avg_title: float
    avg_heading: float
    avg_body: float


@dataclass(frozen=True)
class Weights:
    """How the re-ranking mixes its signals (see the module docstring)."""

    title: float = 2.0
    heading: float = 1.5
    body: float = 1.0
    k1: float = 1.2
    b: float = 0.75
    heading_match: float = 0.6
    document: float = 0.8
    opening: float = 0.15


def rerank(
    candidates: Sequence[KnowledgeHit],
    query: str,
    terms: Sequence[str],
    stats: CorpusStats,
    *,
    limit: int,
    weights: Weights | None = None,
) -> list[KnowledgeHit]:
    """The best `limit` of `candidates`, re-scored (see the module docstring)."""
    if not candidates or not terms:
        return list(candidates)[:limit]
    w = weights or Weights()
    idf = _idf(terms, stats)
    if not idf:
        return list(candidates)[:limit]
    matcher = key_matcher(idf)
    relevance = {c.id: _bm25f(c, idf, matcher, stats, w) for c in candidates}
    best = max(relevance.values()) or 1.0
    per_doc: dict[str, list[float]] = {}
    for c in candidates:
        per_doc.setdefault(c.doc_id, []).append(relevance[c.id] / best)
    strength = {doc: _aggregate(scores) for doc, scores in per_doc.items()}
    top = max(strength.values()) or 1.0
    asked = {key(x) for x in words(query)}

    def score(c: KnowledgeHit) -> float:
        heading = {key(x) for x in words(c.heading)}
        document = strength[c.doc_id] / top
        return (
            relevance[c.id] / best
            + w.heading_match * _dice(asked, heading)
            + w.document * document
            + (w.opening * document if c.position == 0 else 0.0)
        )

    scores = {c.id: round(score(c), 4) for c in candidates}
    best_first = sorted(candidates, key=lambda c: -scores[c.id])[:limit]
    return [replace(c, score=scores[c.id]) for c in best_first]


def distinctive_terms(terms: Sequence[str], stats: CorpusStats) -> list[str]:
    """The terms candidates are matched on: those some section holds and no more than
    `COMMON_SHARE` of them (nor more than `CANDIDATES`, which are taken anyway) do; every
    term when the query has none such."""
    cutoff = max(COMMON_SHARE * stats.sections, CANDIDATES)
    rare = [t for t in terms if 0 < stats.doc_freq.get(t, 0) <= cutoff]
    return rare or list(terms)


def _idf(terms: Sequence[str], stats: CorpusStats) -> dict[str, float]:
    """BM25's idf per term key, for the terms some section holds."""
    n = max(stats.sections, 1)
    idf: dict[str, float] = {}
    for term in terms:
        df = stats.doc_freq.get(term, 0)
        if df > 0:
            idf[key(term)] = max(idf.get(key(term), 0.0), math.log(1 + (n - df + 0.5) / (df + 0.5)))
    return idf


def key_matcher(keys: Iterable[str]) -> re.Pattern[str]:
    """Finds, in lower-case text, the words that may have one of `keys` as their key.

    A word's key is a prefix of it, except where the stemmer turned "-ies" into "-y"
    ("copies" -> "copy"), so a key ending in "y" also matches its "i" form. Only the
    words found are stemmed: stemming every word of 80 sections took most of a search.
    The caller still compares each found word's key exactly."""
    prefixes = set(keys) | {k[:-1] + "i" for k in keys if k.endswith("y")}
    alternatives = "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
    return re.compile(rf"(?<![a-z0-9])(?:{alternatives})[a-z0-9]*")


def _bm25f(
    c: KnowledgeHit,
    idf: Mapping[str, float],
    matcher: re.Pattern[str],
    stats: CorpusStats,
    w: Weights,
) -> float:
    fields = (
        (c.title, w.title, stats.avg_title),
        (c.heading, w.heading, stats.avg_heading),
        (c.text, w.body, stats.avg_body),
    )
    tf: dict[str, float] = dict.fromkeys(idf, 0.0)
    for text, weight, average in fields:
        share = weight / (1 - w.b + w.b * len(text) / max(average, 1.0))
        for word in matcher.findall(text.lower()):
            k = key(word)
            if k in tf:
                tf[k] += share
    return sum(idf[k] * tf[k] / (w.k1 + tf[k]) for k in idf if tf[k])


def _dice(a: set[str], b: set[str]) -> float:
    """How alike two word sets are, stopwords included: a heading that restates the
    question ("How can I get new plates?") matches it closely."""
    return 2 * len(a & b) / (len(a) + len(b)) if a and b else 0.0


def _aggregate(scores: list[float]) -> float:
    """A document's strength: its best section, plus a little for the next two."""
    ordered = sorted(scores, reverse=True)
    return ordered[0] + 0.25 * sum(ordered[1:3])
