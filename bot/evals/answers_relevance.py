"""Answer evaluation with no model: retrieval and the relevance rule alone.

Each question is searched as a decide-first step searches it (`KnowledgeSearchTool`'s
limit), and `agents.knowledge.relevance.relevant` decides which sections it may answer
from. An unanswerable question is answered honestly when nothing is relevant (the step
then sends the "couldn't find that" answer without a model call); an answerable one keeps
its document when a relevant section is of the right document. Seconds per question, so
a change to the rule can be judged on a whole half in a few seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agents.knowledge.relevance import relevant
from agents.knowledge.search import KnowledgeHit, KnowledgeSearch
from agents.tools.knowledge_search import DEFAULT_LIMIT
from bot.evals.answers import AnswerCase, share


@dataclass(frozen=True)
class RelevanceResult:
    """One question's retrieved sections and those the rule kept."""

    case: AnswerCase
    hits: tuple[KnowledgeHit, ...]
    kept: tuple[KnowledgeHit, ...]

    @property
    def honest(self) -> bool:
        """An unanswerable question with nothing relevant."""
        return not self.case.answerable and not self.kept

    @property
    def right_kept(self) -> bool:
        """An answerable question with a relevant section of its document."""
        return self.case.answerable and any(h.doc_id == self.case.doc_id for h in self.kept)


async def evaluate_relevance(
    cases: Sequence[AnswerCase], search: KnowledgeSearch, *, limit: int = DEFAULT_LIMIT
) -> list[RelevanceResult]:
    """Search each case (`limit` sections, as a step does) and apply the relevance rule."""
    results = []
    for case in cases:
        hits = tuple(await search.search(case.question, limit=limit))
        results.append(RelevanceResult(case, hits, tuple(relevant(hits, case.question))))
    return results


def relevance_lines(results: Sequence[RelevanceResult]) -> list[str]:
    """Per source and overall: answerable questions that keep a section of their
    document, keep any section, and unanswerable ones with nothing relevant."""
    lines = []
    for name in (*sorted({r.case.source for r in results}), "overall"):
        part = [r for r in results if name == "overall" or r.case.source == name]
        answerable = [r for r in part if r.case.answerable]
        uncovered = [r for r in part if not r.case.answerable]
        lines += [
            f"[{name}] questions: {len(part)}",
            f"[{name}] answerable, right document kept: "
            + share(sum(r.right_kept for r in answerable), len(answerable)),
            f"[{name}] answerable, some section kept: "
            + share(sum(bool(r.kept) for r in answerable), len(answerable)),
            f"[{name}] honest on unanswerable: "
            + share(sum(r.honest for r in uncovered), len(uncovered)),
        ]
    return lines


def relevance_case_line(result: RelevanceResult) -> str:
    """One question's line: what the rule kept, and the best section."""
    case = result.case
    if case.answerable:
        verdict = "kept" if result.right_kept else ("wrong" if result.kept else "dropped")
    else:
        verdict = "honest" if result.honest else "answered"
    best = result.hits[0] if result.hits else None
    where = f"{best.doc_id} › {best.heading}" if best is not None else "-"
    return f"{case.id} [{case.source}] {verdict} kept={len(result.kept)} best={where}"
