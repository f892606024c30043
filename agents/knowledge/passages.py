"""The sentences of retrieved sections that a small model answers from.

A small model answers best close to the source's own words and from a short prompt: it
gets each relevant section's sentences that share most of the question's words (those of
the best section first), not whole sections. Fewer prompt tokens are also faster.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agents.knowledge.search import KnowledgeHit
from agents.words import STOPWORDS, key, words

# Sentences of the best section kept, and of each other section.
BEST_SENTENCES = 4
OTHER_SENTENCES = 2
# A sentence is cut after this many words (a table row or a run-on list).
SENTENCE_WORDS = 60

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+(?=\s|$))?")
_PROTECTED_DOT = re.compile(r"(?<=\w)\.(?=\w)")


@dataclass(frozen=True)
class Passage:
    """A section's best sentences, in the section's order."""

    hit: KnowledgeHit
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        """The sentences, joined."""
        return " ".join(self.sentences)


def sentences(text: str) -> list[str]:
    """`text`'s sentences and lines (a list item is one), each stripped, none empty."""
    masked = _PROTECTED_DOT.sub("\0", text)
    found = (m.group().replace("\0", ".").strip(" \t-*#>") for m in _SENTENCE.finditer(masked))
    return [s for s in found if len(words(s)) > 1]


def passages(hits: Sequence[KnowledgeHit], question: str) -> list[Passage]:
    """Each hit's sentences that share most of `question`'s words (at most
    `BEST_SENTENCES` of the first hit, `OTHER_SENTENCES` of each other), in the section's
    order; a section with no such sentence gives its first ones."""
    asked = {key(w) for w in words(question) if w not in STOPWORDS}
    found = []
    for rank, hit in enumerate(hits):
        keep = BEST_SENTENCES if rank == 0 else OTHER_SENTENCES
        listed = [_cut(s) for s in sentences(hit.text)]
        shared = [len(asked & {key(w) for w in words(s)}) for s in listed]
        best = [i for i in sorted(range(len(listed)), key=lambda i: (-shared[i], i)) if shared[i]]
        best = best[:keep] or list(range(min(keep, len(listed))))
        found.append(Passage(hit, tuple(listed[i] for i in sorted(best))))
    return found


def _cut(sentence: str) -> str:
    parts = sentence.split()
    return sentence if len(parts) <= SENTENCE_WORDS else " ".join(parts[:SENTENCE_WORDS]) + " …"
