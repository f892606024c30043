"""The models the bot runs on, decided here and only here for every entry point
(`serve`, `socket`, `chat`, `digest`, `eval`): `MODEL` as a litellm model string, or, unset
(or `local`), the embedded model started for the life of the process; `SUMMARY_MODEL` and
`COMPACTION_MODEL` default to whatever `MODEL` resolved to. `bot.wiring` builds the engine
on them."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from agents.models.base import LlmRequest, LlmResponse, Model, ModelError
from agents.models.profile import ModelProfile
from agents.models.slot import ModelSlot, YieldingModel
from bot.config import Settings, secret

if TYPE_CHECKING:
    from bot.local_model.server import LocalEndpoint

NO_KEY = "sk-no-key"
LOCAL_MODEL_NAMES = ("", "local")
"""`MODEL` values that select the embedded local model (so does leaving it unset)."""

ModelRef = Model | str


class LocalModelNotStarted:
    """Stands in for the embedded model when something builds the engine without
    starting it (`open_models` does): building works, and any call fails as a typed
    model error, which the runner turns into an error event. It makes no call, so the
    default profile serves."""

    name = "local"
    profile = ModelProfile()

    async def generate(self, request: LlmRequest) -> LlmResponse:
        raise ModelError(
            "MODEL is not set, so the embedded local model is used, but it was not started "
            "(start it with bot.models.open_models)",
            code="model_unavailable",
        )


def uses_local_model(settings: Settings) -> bool:
    """True when `MODEL` is unset or `local`: the bot runs on the embedded model."""
    return settings.model is None or settings.model.strip() in LOCAL_MODEL_NAMES


def profile_settings(settings: Settings) -> dict[str, Any]:
    """What a model adapter builds its profile from (`agents.models.profile`):
    `TOOL_DECISION`, `DECISION_SCORING`, and `DECISION_LAYOUTS` when set (unset, each
    model keeps its own default layouts)."""
    options: dict[str, Any] = {
        "decision": settings.tool_decision,
        "choice_scoring": settings.decision_scoring,
    }
    if settings.decision_layouts:
        options["decision_layouts"] = settings.decision_layouts
    return options


def model_factory(settings: Settings) -> Callable[[str], Model]:
    """Resolve litellm model strings with the configured API base and key."""

    def make(name: str) -> Model:
        from agents.models.litellm_model import LiteLlmModel

        return LiteLlmModel(
            name,
            api_base=settings.model_api_base,
            api_key=_api_key(name),
            timeout=settings.model_timeout_seconds,
            **profile_settings(settings),
        )

    def _api_key(name: str) -> str | None:
        key = secret(settings.model_api_key)
        if key or not settings.model_api_base or not name.startswith("openai/"):
            return key
        # A local OpenAI-compatible server needs no key, but litellm's client insists on one.
        return None if os.environ.get("OPENAI_API_KEY") else NO_KEY

    return make


@dataclass(frozen=True)
class Models:
    """The models one process runs on, resolved from settings once.

    `main` is the tree's default (`MODEL`); `summary` and `compaction` default to it.
    Each is a litellm model string (resolved by `factory`) or a ready `Model`. `slot` is
    the embedded model's one request slot (`agents.models.slot`): customer turns hold it,
    and summaries and compaction on that same model yield to them (None elsewhere).
    """

    main: ModelRef
    summary: ModelRef
    compaction: ModelRef
    factory: Callable[[str], Model]
    label: str
    slot: ModelSlot | None = None

    def resolve(self, ref: ModelRef) -> Model:
        """A `Model` for `ref`."""
        return self.factory(ref) if isinstance(ref, str) else ref

    def background(self, ref: ModelRef) -> ModelRef:
        """`ref` for background work: on the slotted main model, calls that yield to
        customer turns; any other model as it is."""
        if self.slot is None or ref is not self.main or isinstance(ref, str):
            return ref
        return YieldingModel(ref, self.slot)


def configured_models(settings: Settings, local: LocalEndpoint | None = None) -> Models:
    """The models `settings` name; `local` is the running embedded model, used only when
    `MODEL` is unset (without it, calls fail with `LocalModelNotStarted`'s error)."""
    factory = model_factory(settings)
    main: ModelRef
    slot = None
    if uses_local_model(settings):
        if local is None:
            main, label = LocalModelNotStarted(), "local (not started)"
        else:
            main = local.litellm_model(**profile_settings(settings))
            label = f"{local.model} (embedded, {local.api_base})"
            # The server answers one request at a time (`bot.local_model.serve`).
            slot = ModelSlot()
    else:
        assert settings.model is not None
        main = settings.model
        label = settings.model + (
            f" at {settings.model_api_base}" if settings.model_api_base else ""
        )
    return Models(
        main=main,
        summary=settings.summary_model or main,
        compaction=settings.compaction_model or main,
        factory=factory,
        label=label,
        slot=slot,
    )


@asynccontextmanager
async def open_models(settings: Settings, *, stderr: TextIO | None = None) -> AsyncIterator[Models]:
    """The process's models; starts the embedded model (progress on `stderr`) when `MODEL`
    is unset, and stops it on exit. Raises `bot.local_model.weights.LocalModelError` with
    instructions when the embedded model is not installed."""
    if not uses_local_model(settings):
        yield configured_models(settings)
        return
    from bot.local_model.server import LocalModelServer

    server = LocalModelServer(stderr=stderr)
    endpoint = await server.start()
    try:
        yield configured_models(settings, endpoint)
    finally:
        await server.stop()
