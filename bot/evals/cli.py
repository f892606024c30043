"""`support-bot eval summaries`, `eval routing` and `eval answers`.

All run on any litellm model (`--model`, else the configured `MODEL`, else the
embedded model), including a local OpenAI-compatible server (`MODEL_API_BASE`). They
show a progress bar on stderr (tqdm) and print their report on the output stream.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tqdm import tqdm

from bot.config import Settings
from bot.evals.scratch import scratch_database_url

if TYPE_CHECKING:
    from agents.knowledge.search import KnowledgeSearch
    from bot.evals.answers import AnswerCase
    from bot.evals.dataset import LabelledConversation


async def eval_summaries(
    settings: Settings,
    out: TextIO,
    *,
    data: str,
    model: str | None = None,
    limit: int | None = None,
    seed_validator: bool = False,
    show_problems: bool = False,
    mode: str = "whole",
    half: str | None = None,
) -> int:
    """Summarise `limit` conversations (every nth); `half` ("look" or "measure") keeps
    that half of them (`bot.evals.summaries.split_half`) before `limit` is applied.

    `mode="whole"` prints `EvalReport.lines()` for today's pipeline; with
    `seed_validator`, the same conversations again under the seed's validator; with
    `show_problems`, each conversation's first-attempt problems under its line.
    `incremental` replays each conversation through the windows as live and merges
    (`bot.evals.windows`); `both` runs the two on the same conversations and prints
    them side by side, overall and per source."""
    if mode != "whole":
        return await _compare_modes(
            settings,
            out,
            data=data,
            model=model,
            limit=limit,
            mode=mode,
            show_problems=show_problems,
            half=half,
        )
    from agents.summary.checks.validator import Validator
    from bot.evals.shadow import ShadowValidator
    from bot.evals.summaries import evaluate, outcome_line
    from bot.models import open_models
    from bot.wiring import build_summary_service

    if model:
        settings = settings.model_copy(update={"model": model, "summary_model": model})
    conversations = _selected(data, half, limit)
    # "strict" decides with this validator, with the seed's scoring the same first answers.
    validators: dict[str, Validator] = {
        "strict": ShadowValidator(Validator(), Validator(strict=False))
    }
    if seed_validator:
        validators["seed"] = Validator(strict=False)
    async with open_models(settings) as models:
        out.write(f"model: {models.label}\n")
        for label, validator in validators.items():
            service = build_summary_service(settings, models=models, validator=validator)
            with tqdm(desc=f"summaries ({label})", total=len(conversations), unit="conv") as bar:
                report = await evaluate(
                    conversations,
                    service,
                    label=label,
                    progress=lambda done, _total: bar.update(done - bar.n),
                    on_outcome=lambda outcome: _print_above(
                        bar, outcome_line(outcome, problems=show_problems), out
                    ),
                )
            out.write("\n".join(report.lines()) + "\n")
    return 0


def _selected(data: str, half: str | None, limit: int | None) -> list[LabelledConversation]:
    """The conversations of `data` in `half` (all with None), then every nth of `limit`."""
    from bot.evals.dataset import load_conversations
    from bot.evals.summaries import select_every_nth, split_half

    loaded = [c for c in load_conversations(data) if half is None or split_half(c.id) == half]
    return select_every_nth(loaded, limit or 0)


def _print_above(bar: tqdm, line: str, out: TextIO) -> None:
    """Print a result line at once, without tearing the bar when both share a terminal."""
    bar.write(line, file=out)
    out.flush()


async def eval_routing(
    settings: Settings,
    out: TextIO,
    *,
    data: str,
    model: str | None = None,
    limit: int | None = None,
    routes: str | None = None,
    route_only: bool = False,
    half: str | None = None,
) -> int:
    """Route each conversation's first user message; print accuracy overall and per
    route, the confusion table against `expected_route`, mapped by `routes` (see
    `RouteMap.parse`), overall and per source, seconds per decision and pretend-action
    counts. `route_only` stops each case at the supervisor's transfer and does not write
    its own replies, so it measures decisions only (see `evaluate_routing` and
    `RouteOnlyModel`). `half` ("look" or "measure") keeps that half of the cases
    (`split_half`), before `limit` is applied."""
    from agents.base_agent import BaseAgent
    from agents.tree import build_support_tree
    from bot.evals.route_only import RouteOnlyModel
    from bot.evals.routing import (
        RouteMap,
        case_line,
        evaluate_routing,
        load_cases,
        select_every_nth,
        split_half,
    )
    from bot.models import open_models
    from bot.wiring import build_tree, output_budget

    if model:
        settings = settings.model_copy(update={"model": model})
    route_map = RouteMap.parse(routes)
    loaded = [c for c in load_cases(data) if half is None or split_half(c.id) == half]
    cases = select_every_nth(loaded, limit)
    async with open_models(settings) as models:
        main = models.resolve(models.main)
        layouts = ",".join(main.profile.decision_layouts)
        out.write(
            f"model: {models.label}, decision scoring: {main.profile.choice_scoring}, "
            f"layouts: {layouts}\n"
        )

        def tree() -> BaseAgent:
            if not route_only:
                return build_tree(settings, models)
            model = RouteOnlyModel(models.resolve(models.main))
            root = build_support_tree(
                path=settings.agent_tree_file, model=model, output_budget=output_budget(settings)
            )
            model.root = root.name
            return root

        mapping = ", ".join(f"{k}={v}" for k, v in sorted(route_map.routes.items()))
        out.write(f"routes: {mapping}, anything else={route_map.fallback}\n")
        with tqdm(desc="routing", total=len(cases), unit="case") as bar:
            report = await evaluate_routing(
                cases,
                tree=tree,
                routes=route_map,
                model_factory=models.factory,
                progress=lambda done, _total: bar.update(done - bar.n),
                route_only=route_only,
                on_case=lambda case, result: _print_above(bar, case_line(case, result), out),
            )
    out.write("\n".join(report.lines()) + "\n")
    return 0


async def _compare_modes(
    settings: Settings,
    out: TextIO,
    *,
    data: str,
    model: str | None,
    limit: int | None,
    mode: str,
    show_problems: bool,
    half: str | None,
) -> int:
    from bot.evals.windows import ThreadScore, by_source, compare_modes, side_by_side, thread_line
    from bot.models import open_models
    from bot.wiring import build_summary_service

    if model:
        settings = settings.model_copy(update={"model": model, "summary_model": model})
    conversations = _selected(data, half, limit)
    modes = ("incremental", "whole") if mode == "both" else (mode,)
    async with open_models(settings) as models:
        out.write(f"model: {models.label}; windows of {settings.compaction_interval} invocations\n")
        service = build_summary_service(settings, models=models)
        total = len(conversations) * len(modes)
        with tqdm(desc="summaries", total=total, unit="thread") as bar:

            def shown(name: str, score: ThreadScore) -> None:
                bar.update(1)
                _print_above(bar, thread_line(name, score, problems=show_problems), out)

            reports = await compare_modes(
                conversations,
                service,
                interval=settings.compaction_interval,
                modes=modes,
                on_score=shown,
            )
    out.write("\n".join(side_by_side(reports)) + "\n")
    for source, grouped in by_source(reports).items():
        out.write("\n".join(side_by_side(grouped, group=source)) + "\n")
    return 0


async def eval_answers(
    settings: Settings,
    out: TextIO,
    *,
    docs: Path,
    data: Path,
    model: str | None = None,
    limit: int | None = None,
    half: str | None = None,
    only: str | None = None,
    no_model: bool = False,
) -> int:
    """Index `docs` into a temporary SQLite database, answer each question of `data`
    through the support tree (`AGENT_TREE_FILE`) with that index, and print each
    answer's line and the figures per source and overall (`bot.evals.answers`). A flat
    folder's documents are searched by every agent that declares `knowledge:`
    (`EveryCollection`). `half` ("look" or "measure") keeps that half of the questions,
    and `only` ("answerable" or "unanswerable") those questions, before `limit` is
    applied. `no_model` runs retrieval and the relevance rule alone
    (`bot.evals.answers_relevance`)."""
    from agents.knowledge.documents import KnowledgeDocumentError, load_folder
    from agents.tree import DEFAULT_TREE, TreeSpec
    from bot.evals.answer_run import EveryCollection, evaluate_answers
    from bot.evals.answers import case_line, load_answer_cases, report_lines
    from bot.evals.routing import select_every_nth
    from bot.models import open_models
    from bot.wiring import output_budget
    from storage.database import Database

    if model:
        settings = settings.model_copy(update={"model": model})
    try:
        documents = load_folder(docs)
    except KnowledgeDocumentError as exc:
        out.write(f"eval answers failed: {exc}\n")
        return 1
    cases = [
        c
        for c in load_answer_cases(data)
        if (half is None or c.half == half)
        and (only is None or c.answerable == (only == "answerable"))
    ]
    cases = select_every_nth(cases, limit)
    sections = {s.id: s.text for d in documents for s in d.sections}
    spec = TreeSpec.from_file(settings.agent_tree_file or DEFAULT_TREE)
    with scratch_database_url("eval-answers") as url:
        db = await Database.open(url)
        try:
            report = await db.knowledge.sync(documents)
            out.write(f"{docs}: {report.summary()}\n")
            flat = len({d.collection for d in documents}) <= 1
            search: KnowledgeSearch = EveryCollection(db.knowledge) if flat else db.knowledge
            if no_model:
                return await _relevance_only(cases, search, out)
            async with open_models(settings) as models:
                out.write(f"model: {models.label}\n")
                with tqdm(desc="answers", total=len(cases), unit="question") as bar:
                    results = await evaluate_answers(
                        cases,
                        tree=lambda: spec.build(
                            model=models.main,
                            output_budget=output_budget(settings),
                            knowledge=search,
                        ),
                        search=search,
                        sections=sections,
                        model_factory=models.factory,
                        progress=lambda done, _total: bar.update(done - bar.n),
                        on_result=lambda result: _print_above(bar, case_line(result), out),
                    )
        finally:
            await db.close()
    out.write("\n".join(report_lines(results)) + "\n")
    return 0


async def _relevance_only(cases: list[AnswerCase], search: KnowledgeSearch, out: TextIO) -> int:
    """Retrieval and the relevance rule on `cases`, no model: a line each, then figures."""
    from bot.evals.answers_relevance import (
        evaluate_relevance,
        relevance_case_line,
        relevance_lines,
    )

    results = await evaluate_relevance(cases, search)
    out.write("".join(relevance_case_line(r) + "\n" for r in results))
    out.write("\n".join(relevance_lines(results)) + "\n")
    return 0
