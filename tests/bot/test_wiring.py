"""How settings configure the summary service: one assembly for the bot and the evals."""

from __future__ import annotations

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
    assert service.complete_coverage is True
    assert service.repetition_penalty == LOCAL_REPETITION_PENALTY
    assert service.validator.ground is True


def test_hosted_model_summaries_get_neither_unless_asked() -> None:
    service = summarizer(model="openai/gpt-4o-mini")
    assert service.complete_coverage is False
    assert service.repetition_penalty is None

    asked = summarizer(
        model="openai/gpt-4o-mini",
        summary_complete_coverage=True,
        summary_ground_citations=False,
    )
    assert asked.complete_coverage is True
    assert asked.validator.ground is False


def test_an_evaluation_replaces_the_validator_and_adds_a_shadow() -> None:
    config = Settings(_env_file=None)  # type: ignore[call-arg]
    seed = Validator(strict=False)
    service = build_summarizer(
        config, models=configured_models(config), validator=seed, shadow_validator=seed
    )
    assert service.validator is seed and service.shadow_validator is seed


def test_tool_decision_defaults_per_model_and_can_be_set() -> None:
    from bot.local_model.server import LocalEndpoint

    local = LocalEndpoint(model="local-alias", api_base="http://127.0.0.1:1/v1")
    embedded = configured_models(Settings(_env_file=None), local)  # type: ignore[call-arg]
    # The embedded model has no native tool calling: its agents decide first.
    assert embedded.resolve(embedded.main).decide_first is True  # type: ignore[attr-defined]
    hosted = configured_models(Settings(_env_file=None, model="openai/gpt-4o-mini"))  # type: ignore[call-arg]
    assert hosted.resolve(hosted.main).decide_first is False  # type: ignore[attr-defined]
    for value, expected in (("decide-first", True), ("one-call", False)):
        config = Settings(_env_file=None, model="openai/gpt-4o-mini", tool_decision=value)  # type: ignore[call-arg]
        models = configured_models(config)
        assert models.resolve(models.main).decide_first is expected  # type: ignore[attr-defined]
        config = Settings(_env_file=None, tool_decision=value)  # type: ignore[call-arg]
        models = configured_models(config, local)
        assert models.resolve(models.main).decide_first is expected  # type: ignore[attr-defined]


def test_output_caps_come_from_settings() -> None:
    from agents.llm_agent import LlmAgent
    from bot.wiring import build_tree

    config = Settings(_env_file=None, max_output_tokens=300, tool_agent_max_output_tokens=80)  # type: ignore[call-arg]
    root = build_tree(config, configured_models(config))
    assert isinstance(root, LlmAgent)
    assert root.generate_config.max_tokens == 300
    assert root.tools[0].agent.generate_config.max_tokens == 80  # type: ignore[attr-defined]
