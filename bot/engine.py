"""The agent engine the bot drives, built from settings: runner and summariser."""

from __future__ import annotations

from typing import Any

from agents.compaction import Compactor, EventsCompactionConfig, LlmEventSummarizer
from agents.models.base import Model
from agents.runner import Runner
from agents.tree import build_support_tree
from bot.config import Settings, secret
from bot.digest_job import DigestJob


def model_factory(settings: Settings) -> Any:
    """Resolve litellm model strings with the configured API base and key."""

    def make(name: str) -> Model:
        from agents.models.litellm_model import LiteLlmModel

        return LiteLlmModel(
            name, api_base=settings.model_api_base, api_key=secret(settings.model_api_key)
        )

    return make


def build_runner(settings: Settings, db: Any) -> Runner:
    """The support tree over the database's session service, compacting after each
    invocation on `COMPACTION_MODEL` (default: `MODEL`)."""
    factory = model_factory(settings)
    summarizer = LlmEventSummarizer(factory(settings.compaction_model or settings.model))
    compactor = Compactor(
        db.sessions,
        EventsCompactionConfig(
            summarizer=summarizer,
            compaction_interval=settings.compaction_interval,
            overlap_size=settings.compaction_overlap,
        ),
    )
    return Runner(
        agent=build_support_tree(model=settings.model),
        app_name=settings.app_name,
        session_service=db.sessions,
        model_factory=factory,
        after_invocation=[compactor],
    )


def build_summarizer(settings: Settings, db: Any = None) -> Any:
    """The validated summary service on `SUMMARY_MODEL` (default: `MODEL`); each run's
    metrics are stored when a database is given."""
    from agents.summary.service import SummaryService

    return SummaryService(
        settings.summary_model or settings.model,
        model_factory=model_factory(settings),
        sink=db.summary_runs if db is not None else None,
    )


def build_digest_job(settings: Settings, db: Any, summarizer: Any, client: Any) -> DigestJob:
    """The idle-thread digest pass, configured from settings."""
    return DigestJob(
        db=db,
        summarizer=summarizer,
        client=client,
        lead_channel=settings.support_lead_channel,
        idle_after=settings.idle_after_seconds,
        concurrency=settings.digest_concurrency,
        lease_seconds=settings.digest_lease_seconds,
    )
