"""`support-bot eval summaries` and `support-bot eval routing`.

Both run on any litellm model (`--model`, else the configured `MODEL`, else the
embedded model), including a local OpenAI-compatible server (`MODEL_API_BASE`). They
show a progress bar on stderr (tqdm) and print their report on the output stream.
"""

from __future__ import annotations

from typing import TextIO

from tqdm import tqdm

from bot.config import Settings


async def eval_summaries(
    settings: Settings,
    out: TextIO,
    *,
    data: str,
    model: str | None = None,
    limit: int | None = None,
    seed_validator: bool = False,
    show_problems: bool = False,
) -> int:
    """Summarise `limit` conversations (every nth) and print `EvalReport.lines()`; with
    `seed_validator`, the same conversations again under the seed's validator; with
    `show_problems`, each conversation's first-attempt problems under its line."""
    from agents.summary.checks.validator import Validator
    from bot.evals.dataset import load_conversations
    from bot.evals.shadow import ShadowValidator
    from bot.evals.summaries import evaluate, outcome_line, select_every_nth
    from bot.wiring import build_summarizer, open_models

    if model:
        settings = settings.model_copy(update={"model": model, "summary_model": model})
    conversations = select_every_nth(list(load_conversations(data)), limit or 0)
    # "strict" decides with this validator, with the seed's scoring the same first answers.
    validators: dict[str, Validator] = {
        "strict": ShadowValidator(Validator(), Validator(strict=False))
    }
    if seed_validator:
        validators["seed"] = Validator(strict=False)
    async with open_models(settings) as models:
        out.write(f"model: {models.label}\n")
        for label, validator in validators.items():
            service = build_summarizer(settings, models=models, validator=validator)
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
) -> int:
    """Route each conversation's first user message; print accuracy and the confusion
    table against `expected_route`, mapped by `routes` (see `RouteMap.parse`)."""
    from agents.tree import build_support_tree
    from bot.evals.routing import RouteMap, evaluate_routing, load_cases, select_every_nth
    from bot.wiring import open_models

    if model:
        settings = settings.model_copy(update={"model": model})
    route_map = RouteMap.parse(routes)
    cases = select_every_nth(list(load_cases(data)), limit)
    async with open_models(settings) as models:
        out.write(f"model: {models.label}\n")
        mapping = ", ".join(f"{k}={v}" for k, v in sorted(route_map.routes.items()))
        out.write(f"routes: {mapping}, anything else={route_map.fallback}\n")
        with tqdm(desc="routing", total=len(cases), unit="case") as bar:
            report = await evaluate_routing(
                cases,
                tree=lambda: build_support_tree(path=settings.agent_tree_file, model=models.main),
                routes=route_map,
                model_factory=models.factory,
                progress=lambda done, _total: bar.update(done - bar.n),
            )
    out.write("\n".join(report.lines()) + "\n")
    return 0
