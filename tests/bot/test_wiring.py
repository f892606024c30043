"""How settings configure the summary service: one assembly for the bot and the evals."""

from __future__ import annotations

from agents.summary.aids import SmallModelAids
from agents.summary.service import SummaryService
from agents.summary.validator import Validator
from bot.config import Settings
from bot.wiring import LOCAL_REPETITION_PENALTY, build_summarizer, configured_models


def summarizer(**settings: object) -> SummaryService:
    config = Settings(_env_file=None, **settings)  # type: ignore[call-arg]
    service: SummaryService = build_summarizer(config, models=configured_models(config))
    return service


def test_embedded_model_summaries_get_completion_penalty_and_grounding() -> None:
    service = summarizer()  # MODEL unset: the embedded model
    assert service.aids == SmallModelAids(
        checklist=True,
        complete_coverage=True,
        ground_citations=True,
        repetition_penalty=LOCAL_REPETITION_PENALTY,
    )


def test_hosted_model_summaries_get_neither_unless_asked() -> None:
    service = summarizer(model="openai/gpt-4o-mini")
    assert service.aids.complete_coverage is False
    assert service.aids.repetition_penalty is None
    assert service.aids.ground_citations is True  # SUMMARY_GROUND_CITATIONS defaults on

    asked = summarizer(
        model="openai/gpt-4o-mini",
        summary_complete_coverage=True,
        summary_ground_citations=False,
    )
    assert asked.aids.complete_coverage is True
    assert asked.aids.ground_citations is False


def test_an_evaluation_replaces_the_validator() -> None:
    config = Settings(_env_file=None)  # type: ignore[call-arg]
    seed = Validator(strict=False)
    service = build_summarizer(config, models=configured_models(config), validator=seed)
    assert service.validator is seed
