"""The agent engine the bot drives, built from settings: runner and summariser."""

from __future__ import annotations

from typing import Any

from agents.models.base import Model
from agents.runner import Runner
from agents.tree import build_support_tree
from bot.config import Settings, secret


def model_factory(settings: Settings) -> Any:
    """Resolve litellm model strings with the configured API base and key."""

    def make(name: str) -> Model:
        from agents.models.litellm_model import LiteLlmModel

        return LiteLlmModel(
            name, api_base=settings.model_api_base, api_key=secret(settings.model_api_key)
        )

    return make


def build_runner(settings: Settings, db: Any) -> Runner:
    """The support tree over the database's session service."""
    return Runner(
        agent=build_support_tree(model=settings.model),
        app_name=settings.app_name,
        session_service=db.sessions,
        model_factory=model_factory(settings),
    )


def build_summarizer(settings: Settings) -> Any:
    """The validated summary service on `SUMMARY_MODEL` (default: `MODEL`)."""
    from agents.summary.service import SummaryService

    return SummaryService(
        settings.summary_model or settings.model, model_factory=model_factory(settings)
    )
