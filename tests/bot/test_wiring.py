"""How settings configure the summary service (one assembly for the bot and the evals),
and the one identity a process owns its work under."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from agents.summary.aids.policy import SmallModelAids
from agents.summary.checks.validator import Validator
from agents.summary.service import SummaryService
from bot.config import Settings
from bot.models import configured_models
from bot.slack.app import create_services
from bot.wiring import (
    LOCAL_REPETITION_PENALTY,
    build_digest_job,
    build_summary_service,
    process_owner,
)
from storage.database import Database


def summarizer(**settings: object) -> SummaryService:
    config = Settings(_env_file=None, **settings)  # type: ignore[call-arg]
    service: SummaryService = build_summary_service(config, models=configured_models(config))
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
    service = build_summary_service(config, models=configured_models(config), validator=seed)
    assert service.validator is seed


async def test_one_process_identity_owns_its_messages_and_its_digest_leases(
    tmp_path: Path,
) -> None:
    config = Settings(_env_file=None, slack_bot_token="xoxb-test")  # type: ignore[call-arg]
    db = await Database.open(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    services, slack = await create_services(config, db=db)
    try:
        job = build_digest_job(config, db, services.summarizer, services.client)
        assert services.owner == job.owner == process_owner()
    finally:
        await slack.close()
        await db.close()


def test_tool_decision_defaults_per_model_and_can_be_set() -> None:
    from bot.local_model.server import LocalEndpoint

    local = LocalEndpoint(model="local-alias", api_base="http://127.0.0.1:1/v1")
    embedded = configured_models(Settings(_env_file=None), local)  # type: ignore[call-arg]
    # The embedded model has no native tool calling: its agents decide first.
    assert embedded.resolve(embedded.main).profile.decide_first is True
    hosted = configured_models(Settings(_env_file=None, model="openai/gpt-4o-mini"))  # type: ignore[call-arg]
    assert hosted.resolve(hosted.main).profile.decide_first is False
    for value, expected in (("decide-first", True), ("one-call", False)):
        config = Settings(_env_file=None, model="openai/gpt-4o-mini", tool_decision=value)  # type: ignore[call-arg]
        models = configured_models(config)
        assert models.resolve(models.main).profile.decide_first is expected
        config = Settings(_env_file=None, tool_decision=value)  # type: ignore[call-arg]
        models = configured_models(config, local)
        assert models.resolve(models.main).profile.decide_first is expected


def test_model_profiles_of_the_embedded_and_a_hosted_model() -> None:
    from agents.models.profile import ModelProfile
    from bot.local_model.server import LocalEndpoint

    local = LocalEndpoint(model="local-alias", api_base="http://127.0.0.1:1/v1")
    embedded = configured_models(Settings(_env_file=None), local)  # type: ignore[call-arg]
    # Prompted tools, so it decides first, asked in both layouts and read greedily.
    assert embedded.resolve(embedded.main).profile == ModelProfile(
        native_tools=False, decide_first=True, decision_layouts=("question", "functions")
    )
    hosted = configured_models(Settings(_env_file=None, model="openai/gpt-4o-mini"))  # type: ignore[call-arg]
    assert hosted.resolve(hosted.main).profile == ModelProfile()  # native tools, one call
    # DECISION_SCORING and DECISION_LAYOUTS reach every model's profile.
    for chosen, native in ((local, False), (None, True)):
        config = Settings(  # type: ignore[call-arg]
            _env_file=None,
            model=None if chosen else "openai/gpt-4o-mini",
            decision_scoring="logprobs",
            decision_layouts="functions",
        )
        models = configured_models(config, chosen)
        assert models.resolve(models.main).profile == ModelProfile(
            native_tools=native,
            decide_first=not native,
            choice_scoring="logprobs",
            decision_layouts=("functions",),
        )


def test_output_caps_come_from_settings() -> None:
    from agents.llm.agent import LlmAgent
    from bot.wiring import build_tree

    config = Settings(_env_file=None, max_output_tokens=300, tool_agent_max_output_tokens=80)  # type: ignore[call-arg]
    root = build_tree(config, configured_models(config))
    assert isinstance(root, LlmAgent)
    assert root.generate_config.max_tokens == 300
    assert root.tools[0].agent.generate_config.max_tokens == 80  # type: ignore[attr-defined]


async def test_summary_mode_incremental_by_default_whole_on_request(tmp_path: Path) -> None:
    from agents.compaction import Compactor
    from agents.summary.incremental import IncrementalSummarizer
    from bot.threads.admission import LimitedHook, Priority
    from bot.wiring import build_runner, build_summarizer, work_limit

    db = await Database.open(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    try:
        assert Settings(_env_file=None).summary_mode == "incremental"  # type: ignore[call-arg]
        whole = Settings(_env_file=None, summary_mode="whole")  # type: ignore[call-arg]
        assert isinstance(build_summarizer(whole, db, configured_models(whole)), SummaryService)
        [only] = build_runner(whole, db).after_invocation
        assert isinstance(only, Compactor)

        windows = Settings(_env_file=None, compaction_interval=4)  # type: ignore[call-arg]
        summarizer = build_summarizer(windows, db, configured_models(windows))
        assert isinstance(summarizer, IncrementalSummarizer)
        assert (summarizer.store, summarizer.interval) == (db.windows, 4)
        # In a running bot the window hook waits for the shared slot count, replies first.
        limit = work_limit(windows)
        compaction, hook = build_runner(windows, db, limit=limit).after_invocation
        assert isinstance(compaction, LimitedHook) and isinstance(hook, LimitedHook)
        assert (compaction.limit, compaction.priority) == (limit, Priority.DIGEST)
        assert isinstance(compaction.hook, Compactor)
        assert (hook.limit, hook.priority) == (limit, Priority.DIGEST)
        assert isinstance(hook.hook, IncrementalSummarizer)
        assert hook.hook.session_service is db.sessions
    finally:
        await db.close()


async def test_the_bot_shares_one_slot_count_between_replies_compaction_and_window_summaries(
    tmp_path: Path,
) -> None:
    from bot.threads.admission import LimitedHook

    config = Settings(_env_file=None, slack_bot_token="xoxb-test", summary_mode="incremental")  # type: ignore[call-arg]
    db = await Database.open(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    services, slack = await create_services(config, db=db)
    try:
        hooks = [h for h in services.runner.after_invocation if isinstance(h, LimitedHook)]
        assert [h.limit for h in hooks] == [services.worker.limit] * 2
    finally:
        await slack.close()
        await db.close()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"compaction_interval": 0, "compaction_overlap": 0}, "greater than or equal to 1"),
        ({"compaction_overlap": -1}, "greater than or equal to 0"),
        ({"compaction_interval": 2, "compaction_overlap": 2}, r"COMPACTION_OVERLAP \(2\) must"),
        ({"compaction_interval": 1}, r"COMPACTION_OVERLAP \(1\) must be below COMPACTION_INTERVAL"),
    ],
)
def test_settings_reject_a_compaction_interval_or_overlap_out_of_bounds(
    values: dict[str, int], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(_env_file=None, **values)  # type: ignore[arg-type,call-arg]


async def test_on_the_embedded_model_turns_hold_its_one_slot_and_summaries_yield(
    tmp_path: Path,
) -> None:
    from agents.models.slot import ModelSlot, YieldingModel
    from bot.local_model.server import LocalEndpoint
    from bot.wiring import build_runner, build_summary_service

    local = LocalEndpoint(model="local-alias", api_base="http://127.0.0.1:1/v1")
    db = await Database.open(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    try:
        config = Settings(_env_file=None)  # type: ignore[call-arg]
        embedded = configured_models(config, local)
        assert isinstance(embedded.slot, ModelSlot)
        assert build_runner(config, db, embedded).model_slot is embedded.slot
        summaries = build_summary_service(config, db, embedded).model
        assert isinstance(summaries, YieldingModel) and summaries.slot is embedded.slot
        assert summaries.model is embedded.main
        assert embedded.background(embedded.compaction) is not embedded.compaction
        # A hosted model serves many requests at once: no slot, nothing yields.
        hosted_config = Settings(_env_file=None, model="openai/gpt-4o-mini")  # type: ignore[call-arg]
        hosted = configured_models(hosted_config)
        assert hosted.slot is None and build_runner(hosted_config, db, hosted).model_slot is None
        assert build_summary_service(hosted_config, db, hosted).model == "openai/gpt-4o-mini"
        # A summary model of its own (SUMMARY_MODEL) is another server: it does not yield.
        own = Settings(_env_file=None, summary_model="openai/gpt-4o-mini")  # type: ignore[call-arg]
        assert build_summary_service(own, db, configured_models(own, local)).model == (
            "openai/gpt-4o-mini"
        )
    finally:
        await db.close()
