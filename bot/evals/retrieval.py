"""Retrieval evaluation: does the knowledge search rank the right document and section?

Each answerable question of a `questions.jsonl` set (fields `id`, `question`, `doc_id`,
`section`, `answerable`; see `../shared/data/knowledge_dev/README.md`) is searched in an
index of the set's documents. A document's rank is that of its best section. The set is
split once, by a seeded hash of each question's id (`split_half`), into a half to look at
while developing ranking ("look") and a half only measured ("measure"); figures are
printed for each half and overall, each on its own line under a stable label.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agents.knowledge.search import KnowledgeHit, KnowledgeSearch

SPLIT_SEED = "knowledge-split-1"
"""The split's seed: fixed once, so a question stays in its half from run to run."""
Half = Literal["look", "measure"]
HALVES: tuple[Half, ...] = ("look", "measure")
# Sections fetched per question: enough to find five distinct documents.
DEPTH = 30


@dataclass(frozen=True)
class RetrievalCase:
    """One answerable question and where its answer is."""

    id: str
    question: str
    doc_id: str
    section: str | None

    @property
    def half(self) -> Half:
        """ "look" or "measure", fixed by the id's seeded hash (`split_half`)."""
        return split_half(self.id)


def split_half(case_id: str) -> Half:
    """The half a question belongs to, from a seeded hash of its id: "look" (read while
    developing ranking) or "measure" (only measured)."""
    digest = hashlib.sha256(f"{SPLIT_SEED}:{case_id}".encode()).digest()
    return HALVES[digest[0] % 2]


@dataclass(frozen=True)
class RetrievalResult:
    """Where the right document and section ranked (1-based; None: not found)."""

    case: RetrievalCase
    doc_rank: int | None
    section_rank: int | None


def load_cases(path: Path) -> list[RetrievalCase]:
    """The answerable questions of a questions JSONL file."""
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("answerable") and row.get("doc_id"):
            cases.append(
                RetrievalCase(row["id"], row["question"], row["doc_id"], row.get("section"))
            )
    return cases


def ranks(case: RetrievalCase, hits: Sequence[KnowledgeHit]) -> RetrievalResult:
    """Where `case`'s document and section rank among `hits` (best first)."""
    doc_order = list(dict.fromkeys(h.doc_id for h in hits))
    doc_rank = doc_order.index(case.doc_id) + 1 if case.doc_id in doc_order else None
    section_rank = next(
        (
            i
            for i, h in enumerate(hits, start=1)
            if h.doc_id == case.doc_id and h.heading == case.section
        ),
        None,
    )
    return RetrievalResult(case, doc_rank, section_rank)


async def evaluate(
    search: KnowledgeSearch, cases: Sequence[RetrievalCase]
) -> list[RetrievalResult]:
    """Search each case's question; its ranks."""
    return [ranks(case, await search.search(case.question, limit=DEPTH)) for case in cases]


def figures(results: Sequence[RetrievalResult]) -> dict[str, float]:
    """document hit@1/@5 and section hit@1/@5 over `results`."""
    n = len(results) or 1

    def share(ranked: list[int | None], k: int) -> float:
        return round(sum(1 for r in ranked if r is not None and r <= k) / n, 3)

    docs = [r.doc_rank for r in results]
    sections = [r.section_rank for r in results]
    return {
        "document hit@1": share(docs, 1),
        "document hit@5": share(docs, 5),
        "section hit@1": share(sections, 1),
        "section hit@5": share(sections, 5),
    }


def report_lines(results: Sequence[RetrievalResult], halves: Sequence[str] = HALVES) -> list[str]:
    """The figures per half (of `halves`) and overall (when there are several halves), one
    `[group] label: value` line each."""
    lines = []
    for name in (*halves, "overall") if len(halves) > 1 else halves:
        part = [r for r in results if name == "overall" or r.case.half == name]
        lines.append(f"[{name}] questions: {len(part)}")
        lines.extend(f"[{name}] {label}: {value:.3f}" for label, value in figures(part).items())
    return lines
