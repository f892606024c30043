"""Answer evaluation, running half: each question through the support tree.

Each question is first searched in the knowledge index (the ranks of its document and
section), then sent alone through a fresh tree in a fresh in-memory session, with the
knowledge index given to every agent that declares `knowledge:`. The sections an answer
could use are the ones its reply cites (`custom_metadata["knowledge_sources"]`) and the
ones the `search_knowledge` tool returned during the invocation; its values are checked
against those and the question (`bot.evals.answers`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents.base_agent import BaseAgent
from agents.callbacks import BasePlugin
from agents.events import Event, Usage
from agents.knowledge.search import KnowledgeHit, KnowledgeSearch
from agents.models.base import Model
from agents.runner import Runner
from agents.sessions.service import InMemorySessionService
from agents.tools.knowledge_search import KnowledgeSearchTool
from bot.evals.answers import AnswerCase, AnswerResult, unsupported_values
from bot.evals.retrieval import DEPTH, RetrievalCase, ranks
from bot.threads.turn import TurnOutcome

EVAL_APP = "answers_eval"
SOURCES_KEY = "knowledge_sources"
CHECK_KEY = "knowledge_check"


class EveryCollection:
    """A `KnowledgeSearch` that searches every collection, whatever an agent declares:
    a question set's documents in one flat folder belong to no agent's collection, and
    the evaluation measures answers from them, not the tree's split of its documents."""

    def __init__(self, search: KnowledgeSearch) -> None:
        self.search_all = search

    async def search(
        self, query: str, *, collections: Sequence[str] | None = None, limit: int = 5
    ) -> list[KnowledgeHit]:
        """The best `limit` sections for `query` in every collection."""
        return await self.search_all.search(query, limit=limit)


def section_texts(event: Event, known: Mapping[str, str]) -> list[str]:
    """The texts of the sections `event` holds: those a `search_knowledge` response
    returned, and those its `knowledge_sources` cite (looked up in `known`, by id)."""
    texts: list[str] = []
    for response in event.function_responses:
        if response.name != KnowledgeSearchTool.name or not isinstance(response.response, dict):
            continue
        for section in response.response.get("sections") or []:
            if isinstance(section, dict):
                texts.append(_cited_text(section, known))
    for source in event.custom_metadata.get(SOURCES_KEY) or []:
        if isinstance(source, dict):
            texts.append(_cited_text(source, known))
    return texts


def _cited_text(section: Mapping[str, Any], known: Mapping[str, str]) -> str:
    parts = (section.get("title"), section.get("heading"), section.get("text"))
    return "\n".join([*(str(p) for p in parts if p), known.get(str(section.get("id")), "")])


async def evaluate_answers(
    cases: Sequence[AnswerCase],
    *,
    tree: Callable[[], BaseAgent],
    search: KnowledgeSearch,
    sections: Mapping[str, str],
    model_factory: Callable[[str], Model] | None = None,
    plugins: Sequence[BasePlugin] = (),
    progress: Callable[[int, int], None] | None = None,
    on_result: Callable[[AnswerResult], None] | None = None,
) -> list[AnswerResult]:
    """Search and answer each case in a fresh session; its scores. `sections` maps a
    section id to its text (what a cited source said); `tree` builds a fresh tree
    whose agents search `search`; `plugins` are the runner's (as the bot runs it)."""
    sessions = InMemorySessionService()
    runner = Runner(
        agent=tree(),
        app_name=EVAL_APP,
        session_service=sessions,
        model_factory=model_factory,
        plugins=plugins,
    )
    results: list[AnswerResult] = []
    for done, case in enumerate(cases, start=1):
        hits = await search.search(case.question, limit=DEPTH)
        found = ranks(RetrievalCase(case.id, case.question, case.doc_id or "", case.section), hits)
        session = await sessions.create_session(app_name=EVAL_APP, user_id="eval")
        outcome = TurnOutcome()
        given: list[str] = []
        usage, calls = Usage(), 0
        start = time.perf_counter()
        async for event in runner.run_async(
            user_id="eval", session_id=session.id, message=case.question
        ):
            outcome.observe(event)
            if not event.partial:
                given.extend(section_texts(event, sections))
                if event.usage is not None:
                    usage = usage + event.usage
                    calls += event.usage.model_calls
        seconds = time.perf_counter() - start
        await sessions.delete_session(app_name=EVAL_APP, user_id="eval", session_id=session.id)
        reply = outcome.reply.text if outcome.reply is not None and outcome.answered else ""
        metadata = outcome.reply.custom_metadata if outcome.reply is not None else {}
        check = metadata.get(CHECK_KEY)
        result = AnswerResult(
            case=case,
            doc_rank=found.doc_rank if case.answerable else None,
            section_rank=found.section_rank if case.answerable else None,
            reply=reply,
            knowledge_check=check if isinstance(check, str) else None,
            seconds=seconds,
            unsupported=unsupported_values(reply, case.question, given),
            model_calls=calls,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
        )
        results.append(result)
        if on_result is not None:
            on_result(result)
        if progress is not None:
            progress(done, len(cases))
    return results
