"""Which of the retrieved sections a checked reply cites: those that support it.

A section supports a reply when it states one of the reply's checked values (an amount,
deadline, percentage, error code, form or policy name: `agents.knowledge.values`), or
when one of its sentences and one of the reply's share a run of `RUN_WORDS` content
words in the same order ("original payment method within business days"). Words shared
across a whole section do not count: a section about another error still says "app",
"settings" and "Windows", and would be cited for them. When no section supports the
reply, the best-ranked one is cited, since the reply was written from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.knowledge.passages import sentences
from agents.knowledge.search import KnowledgeHit
from agents.knowledge.values import Value, states, values
from agents.words import STOPWORDS, key, words

RUN_WORDS = 3
"""How many content words in a row a reply sentence and a section sentence must share."""


def cited_sources(hits: Sequence[KnowledgeHit], reply: str) -> list[dict[str, Any]]:
    """The citations (`KnowledgeHit.source`) of the sections among `hits` that support
    `reply`, in `hits`' order; the best section when none does."""
    said = values(reply)
    reply_runs = runs(reply)
    used = [hit for hit in hits if _supports(hit, said, reply_runs)]
    return [h.source() for h in (used or list(hits[:1]))]


def runs(text: str) -> set[tuple[str, ...]]:
    """Every `RUN_WORDS` consecutive content words (stop words and bare numbers left
    out, each word by its key) within one sentence of `text` (`passages.sentences`: a
    hard-wrapped line goes on into the next)."""
    found: set[tuple[str, ...]] = set()
    for sentence in sentences(text):
        content = [key(w) for w in words(sentence) if w not in STOPWORDS and not w.isdigit()]
        found.update(tuple(content[i : i + RUN_WORDS]) for i in range(len(content) - RUN_WORDS + 1))
    return found


def _supports(hit: KnowledgeHit, said: Sequence[Value], reply_runs: set[tuple[str, ...]]) -> bool:
    text = f"{hit.title}\n\n{hit.heading}\n\n{hit.text}"
    return any(states(text, v) for v in said) or bool(reply_runs & runs(text))
