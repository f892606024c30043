"""The sentences of retrieved sections that a small model answers from.

A small model answers best close to the source's own words and from a short prompt: it
gets each relevant section's sentences that share most of the question's words (those of
the best section first), not whole sections. Fewer prompt tokens are also faster. Its
answer is kept short, and the best section's most relevant sentences are quoted under it.
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
# Sentences of the best section quoted under a small model's answer.
QUOTE_SENTENCES = 3
# A sentence is cut after this many words (a table row or a run-on list).
SENTENCE_WORDS = 60

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+(?=\s|$))?")
_PROTECTED_DOT = re.compile(r"(?<=\w)\.(?=\w)")
# A line break inside a paragraph (hard-wrapped text) is a space; one before a list item,
# a quote, a heading or a blank line ends the line's sentence.
_WRAPPED = re.compile(r"[ \t]*\n(?![ \t]*(?:[-*+>#]|\d+[.)]|\n))[ \t]*")


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
    masked = _PROTECTED_DOT.sub("\0", _WRAPPED.sub(" ", text))
    found = (m.group().replace("\0", ".").strip(" \t-*#>") for m in _SENTENCE.finditer(masked))
    return [s for s in found if len(words(s)) > 1]


def passages(
    hits: Sequence[KnowledgeHit],
    question: str,
    *,
    best: int = BEST_SENTENCES,
    other: int = OTHER_SENTENCES,
) -> list[Passage]:
    """Each hit's sentences that share most of `question`'s words (at most `best` of the
    first hit, `other` of each other), in the section's order; a section with no such
    sentence gives its first ones."""
    asked = {key(w) for w in words(question) if w not in STOPWORDS}
    found = []
    for rank, hit in enumerate(hits):
        keep = best if rank == 0 else other
        listed = [_cut(s) for s in sentences(hit.text)]
        shared = [len(asked & {key(w) for w in words(s)}) for s in listed]
        chosen = [i for i in sorted(range(len(listed)), key=lambda i: (-shared[i], i)) if shared[i]]
        chosen = chosen[:keep] or list(range(min(keep, len(listed))))
        found.append(Passage(hit, tuple(listed[i] for i in sorted(chosen))))
    return found


def quoted(reply: str, hit: KnowledgeHit, question: str) -> str:
    """`reply` with the best section's `QUOTE_SENTENCES` most relevant sentences quoted
    under it (those it does not already hold word for word): a small model's short answer
    can drop the fact asked for, and the section's own words cannot be wrong."""
    [passage] = passages([hit], question, best=QUOTE_SENTENCES)
    said = _plain(reply)
    new = [s for s in passage.sentences if _plain(s) not in said]
    if not new:
        return reply
    return f"{reply.rstrip()}\n\n> " + " ".join(new)


def _plain(text: str) -> str:
    return " ".join(words(text))


def _cut(sentence: str) -> str:
    parts = sentence.split()
    return sentence if len(parts) <= SENTENCE_WORDS else " ".join(parts[:SENTENCE_WORDS]) + " …"
