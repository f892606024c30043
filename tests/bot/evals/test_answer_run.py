"""The answer evaluation on a real SQLite knowledge index: each question searched,
then answered through a tree whose agent declares `knowledge:` (the fixture's own
tree YAML), and scored; and `support-bot eval answers` end to end on a fake hosted model."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agents.knowledge.documents import load_folder
from agents.models.base import LlmRequest
from agents.models.scripted import ScriptedModel, call
from agents.tree import TreeSpec
from bot.config import Settings
from bot.evals.answer_run import EveryCollection, evaluate_answers
from bot.evals.answers import NOT_FOUND, load_answer_cases, report_lines
from bot.evals.cli import eval_answers
from storage import Database
from tests.fakes.openai_server import FakeOpenAIServer, Reply, text, tool_call, tool_call_reply

FIXTURE = Path(__file__).parents[2] / "fixtures" / "knowledge_eval"
NOT_COVERED = "I couldn't find that in our documentation. Shall I hand you to a person?"


@pytest.fixture
async def db(sqlite_url: str) -> AsyncIterator[Database]:
    database = await Database.open(sqlite_url)
    await database.knowledge.sync(load_folder(FIXTURE / "docs"))
    try:
        yield database
    finally:
        await database.close()


def search_for_the_question(request: LlmRequest) -> Any:
    return call("search_knowledge", query=request.contents[-1].text)


async def test_answer_eval_scores_each_answer_from_the_sections_it_was_given(
    db: Database,
) -> None:
    cases = load_answer_cases(FIXTURE / "questions.jsonl")
    documents = load_folder(FIXTURE / "docs")
    search = EveryCollection(db.knowledge)
    model = ScriptedModel(
        [
            search_for_the_question,
            "A duplicate charge is refunded in full within 5 business days.",
            search_for_the_question,
            "Yes, within 14 days of purchase.",  # invented: the policy says 30
            "Yes, within 30 days of purchase.",  # the reply check's one rewrite
            search_for_the_question,
            "Run the installer as an administrator, then restart the app.",
            search_for_the_question,
            NOT_COVERED,
        ]
    )
    spec = TreeSpec.from_file(FIXTURE / "tree.yaml")
    seen: list[str] = []
    results = await evaluate_answers(
        cases,
        tree=lambda: spec.build(model=model, knowledge=search),
        search=search,
        sections={s.id: s.text for d in documents for s in d.sections},
        on_result=lambda result: seen.append(result.case.id),
    )
    assert seen == [c.id for c in cases]
    assert [(r.doc_rank, r.section_rank) for r in results] == [
        (1, 1),
        (1, 1),
        (1, 1),
        (None, None),
    ]
    # The shipped reply check caught the invented 14 and had it written again.
    assert [r.unsupported for r in results] == [(), (), (), ()]
    assert [r.knowledge_check for r in results] == [
        "supported",
        "rewritten",
        "supported",
        NOT_FOUND,
    ]
    assert [r.honest for r in results] == [False, False, False, True]
    lines = report_lines(results)
    assert "[overall] key-fact recall: 1.000 (2/2)" in lines
    assert "[overall] unsupported values: 0 (of 4 answers)" in lines
    assert "[overall] honest on unanswerable: 1.000 (1/1)" in lines


def hosted_model(body: dict[str, Any]) -> Reply:
    """Searches for the user's question, then answers from the first section found."""
    last = body["messages"][-1]
    if last["role"] == "user":
        return tool_call_reply(tool_call("search_knowledge", {"query": last["content"]}))
    return text("Run the installer as an administrator, then restart the app.")


async def test_eval_answers_command_prints_every_figure_per_source_and_overall(
    tmp_path: Path,
) -> None:
    async with FakeOpenAIServer([hosted_model] * 8) as server:
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
            model="openai/unused",
            model_api_base=server.base_url,
            agent_tree_file=FIXTURE / "tree.yaml",
        )
        out = io.StringIO()
        code = await eval_answers(
            settings,
            out,
            docs=FIXTURE / "docs",
            data=FIXTURE / "questions.jsonl",
            model="openai/test",
        )
        server.assert_complete()
    assert code == 0
    lines = out.getvalue().splitlines()
    assert lines[:2] == [
        f"{FIXTURE / 'docs'}: 2 added, 0 updated, 0 removed, 0 unchanged",
        f"model: openai/test at {server.base_url}",
    ]
    labels = [
        "questions", "document hit@1", "document hit@5", "section hit@5", "key-fact recall",
        "token F1", "unsupported values", "honest on unanswerable",
        "seconds per answer (median)", "model calls per answer (median)",
        "prompt tokens per answer (median)", "completion tokens per answer (median)",
    ]  # fmt: skip
    for group in ("billing", "tech", "overall"):
        found = [
            line.split("] ", 1)[1].split(": ")[0] for line in lines if line.startswith(f"[{group}]")
        ]
        assert found == labels
    assert "[overall] document hit@5: 1.000 (3/3)" in lines
    assert "[tech] token F1: 0.857" in lines  # 6 of 7 words in common
    assert "[overall] honest on unanswerable: 1.000 (1/1)" in lines  # nothing relevant found
    assert not (tmp_path / "bot.db").exists()


async def test_eval_answers_without_a_model_runs_retrieval_and_the_relevance_rule_alone(
    tmp_path: Path,
) -> None:
    """`--no-model`: no model server is asked anything (none is configured); each question's
    verdict, then the figures per source and overall."""
    async with FakeOpenAIServer([]) as server:
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
            model="openai/unused",
            model_api_base=server.base_url,
        )
        out = io.StringIO()
        code = await eval_answers(
            settings, out, docs=FIXTURE / "docs", data=FIXTURE / "questions.jsonl", no_model=True
        )
    assert server.requests == []
    assert code == 0
    lines = out.getvalue().splitlines()
    assert lines[1:5] == [
        "t-refund-dup [billing] kept kept=2 best=billing-refunds › Duplicate charges",
        "t-refund-window [billing] kept kept=1 best=billing-refunds › Refund window",
        "t-access-denied [tech] kept kept=2 best=tech-errors › Error 0x80070005",
        "t-gift-cards [billing] honest kept=0 best=-",
    ]
    assert lines[-3:] == [
        "[overall] answerable, right document kept: 1.000 (3/3)",
        "[overall] answerable, some section kept: 1.000 (3/3)",
        "[overall] honest on unanswerable: 1.000 (1/1)",
    ]


async def test_eval_answers_only_keeps_the_questions_asked_for(tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        model="openai/unused",
    )
    out = io.StringIO()
    data = FIXTURE / "questions.jsonl"
    await eval_answers(
        settings, out, docs=FIXTURE / "docs", data=data, no_model=True, only="unanswerable"
    )
    assert [line.split()[0] for line in out.getvalue().splitlines()[1:2]] == ["t-gift-cards"]
    assert "[overall] questions: 1" in out.getvalue()
    out = io.StringIO()
    await eval_answers(
        settings, out, docs=FIXTURE / "docs", data=data, no_model=True, only="answerable"
    )
    assert "[overall] questions: 3" in out.getvalue()
    assert "t-gift-cards" not in out.getvalue()
