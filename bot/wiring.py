"""The agent engine the bot drives, built from settings: models, runner and summariser.

Which model the bot runs on is decided here and only here, for every entry point
(`serve`, `socket`, `chat`, `digest`, `eval`):

- `MODEL` set to a litellm model string: that model, reached through litellm with
  `MODEL_API_BASE` / `MODEL_API_KEY` (a hosted API, or any OpenAI-compatible server).
- `MODEL` unset (or `local`): the embedded local model (`bot.local_model.server`), started on
  127.0.0.1 for the life of the process and reached through litellm like any other model,
  with prompted tool calls.

`TOOL_DECISION` (auto: decide first on a model without native tool calling, such as the
embedded one), `DECISION_SCORING` and `DECISION_LAYOUTS` make each model's profile
(`agents.models.profile`, with the model's own default layouts when unset); they and the
output caps `MAX_OUTPUT_TOKENS` / `TOOL_AGENT_MAX_OUTPUT_TOKENS` apply to every model of
the tree.

`SUMMARY_MODEL` and `COMPACTION_MODEL` default to whatever `MODEL` resolved to::

    async with open_models(settings) as models:
        runner = build_runner(settings, db, models)
        summarizer = build_summarizer(settings, db, models)

`SUMMARY_MODE=incremental` (the default) writes a validated record per window as the
thread goes (an after-invocation hook next to compaction, holding a slot of the process's
shared `PriorityLimit` at digest priority, so replies go first) and merges them for
digests, hand-offs and `/summary`; `whole` summarises the whole thread when a summary is
needed. On the embedded model, which answers one request at a time, summaries and
compaction also yield its one slot to customer turns (`Models.slot`,
`agents.models.slot`): a reply never waits behind a window summary.
"""

from __future__ import annotations

import functools
import os
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from agents.base_agent import BaseAgent
from agents.compaction import Compactor, EventsCompactionConfig, LlmEventSummarizer
from agents.knowledge.search import KnowledgeSearch
from agents.models.base import LlmRequest, LlmResponse, Model, ModelError
from agents.models.profile import ModelProfile
from agents.models.slot import ModelSlot, YieldingModel
from agents.runner import AfterInvocationHook, Runner
from agents.sessions.service import SessionService
from agents.tree import OutputBudget, build_support_tree
from bot.config import Settings, secret
from bot.digests.job import DigestJob
from bot.digests.posting import DigestPoster
from bot.slack.message_ts import SlackTsPlugin
from bot.threads.admission import LimitedHook, Priority, PriorityLimit
from bot.threads.loop_lag import LoopLagGate
from bot.threads.speaker import SpeakerPlugin
from bot.threads.summaries import Summarizer
from storage.database import Database

if TYPE_CHECKING:
    from agents.summary.aids.policy import SmallModelAids
    from agents.summary.checks.validator import Validator
    from agents.summary.incremental import IncrementalSummarizer
    from agents.summary.service import SummaryService
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
            "(start it with bot.wiring.open_models)",
            code="model_unavailable",
        )


LOCAL_REPETITION_PENALTY = 1.05


@functools.cache
def process_owner() -> str:
    """This process's identity, the same for everything it owns: the messages it has
    accepted (`storage.delivery.inflight`) and the digest leases it holds (`storage.threads`).
    Random per start, so a restarted process takes over what its predecessor left."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


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


def loop_lag_gate(settings: Settings) -> LoopLagGate:
    """Holds work starts while the event loop lags (`HOLD_STARTS_OVER_LOOP_LAG_MS`)."""
    return LoopLagGate(threshold=settings.hold_starts_over_loop_lag_ms / 1000)


def work_limit(settings: Settings, gate: LoopLagGate | None = None) -> PriorityLimit:
    """The process's one slot count (`MAX_CONCURRENT_INVOCATIONS`), shared by replies,
    commands, digests, compaction and window summaries, behind `gate` when given."""
    return PriorityLimit(
        settings.max_concurrent_invocations, gate=None if gate is None else gate.admit
    )


def build_runner(
    settings: Settings,
    db: Database,
    models: Models | None = None,
    limit: PriorityLimit | None = None,
) -> Runner:
    """The support tree over the database's session service, compacting after each
    invocation on `COMPACTION_MODEL` (default: `MODEL`) and, with
    `SUMMARY_MODE=incremental`, summarising each window compaction closes (both under
    `limit` when given, and both yielding to customer turns on the embedded model's slot)."""
    models = models or configured_models(settings)
    compaction = compaction_hook(
        settings, db.sessions, models.resolve(models.background(models.compaction)), limit
    )
    return Runner(
        agent=build_tree(settings, models, db.knowledge),
        app_name=settings.app_name,
        session_service=db.sessions,
        model_factory=models.factory,
        after_invocation=[compaction, *window_hooks(settings, db, models, limit)],
        plugins=[SlackTsPlugin(), SpeakerPlugin()],
        max_message_chars=settings.max_model_message_chars,
        model_slot=models.slot,
    )


def compaction_hook(
    settings: Settings,
    sessions: SessionService,
    model: Model,
    limit: PriorityLimit | None = None,
) -> AfterInvocationHook:
    """Compaction on `model` after each invocation (`COMPACTION_INTERVAL`,
    `COMPACTION_OVERLAP`); with `limit`, it waits for a slot at digest priority, behind
    every waiting reply."""
    compactor = Compactor(
        sessions,
        EventsCompactionConfig(
            summarizer=LlmEventSummarizer(model),
            compaction_interval=settings.compaction_interval,
            overlap_size=settings.compaction_overlap,
        ),
    )
    if limit is None:
        return compactor
    return LimitedHook(compactor, limit, Priority.DIGEST, due=compactor.due)


def output_budget(settings: Settings) -> OutputBudget:
    """The agents' output token caps from `MAX_OUTPUT_TOKENS` and
    `TOOL_AGENT_MAX_OUTPUT_TOKENS`."""
    return OutputBudget(
        agent=settings.max_output_tokens, tool_agent=settings.tool_agent_max_output_tokens
    )


def build_tree(
    settings: Settings, models: Models, knowledge: KnowledgeSearch | None = None
) -> BaseAgent:
    """A fresh support tree from `AGENT_TREE_FILE` on `MODEL`, with the configured output
    caps; with `knowledge` (the database's index), agents that declare collections in the
    tree search them."""
    return build_support_tree(
        path=settings.agent_tree_file,
        model=models.main,
        output_budget=output_budget(settings),
        knowledge=knowledge,
    )


def window_hooks(
    settings: Settings, db: Database, models: Models, limit: PriorityLimit | None = None
) -> list[AfterInvocationHook]:
    """The after-invocation hook that writes window records (none in `whole` mode); with
    `limit`, it waits for a slot at digest priority, behind every waiting reply."""
    if settings.summary_mode != "incremental":
        return []
    hook = incremental_summarizer(settings, db, build_summary_service(settings, db, models))
    return [hook if limit is None else LimitedHook(hook, limit, Priority.DIGEST)]


def incremental_summarizer(
    settings: Settings, db: Database | None, service: SummaryService
) -> IncrementalSummarizer:
    """Window records on `service`, stored in the database (in memory without one),
    windows of at least `COMPACTION_INTERVAL` invocations, closing once they hold a value."""
    from agents.summary.incremental import IncrementalSummarizer
    from agents.summary.windows import InMemoryWindowStore, WindowStore

    store: WindowStore = db.windows if db is not None else InMemoryWindowStore()
    return IncrementalSummarizer(
        service,
        store,
        interval=settings.compaction_interval,
        session_service=db.sessions if db is not None else None,
    )


def build_summarizer(
    settings: Settings, db: Database | None = None, models: Models | None = None
) -> Summarizer:
    """What digests, hand-offs and `/summary` summarise with, per `SUMMARY_MODE`: merged
    window records (`incremental`) or one summary of the whole thread (`whole`)."""
    service = build_summary_service(settings, db, models)
    if settings.summary_mode == "whole":
        return service
    return incremental_summarizer(settings, db, service)


def build_summary_service(
    settings: Settings,
    db: Database | None = None,
    models: Models | None = None,
    *,
    validator: Validator | None = None,
) -> SummaryService:
    """The validated summary service on `SUMMARY_MODEL` (default: `MODEL`), with the aids
    its model needs (`summary_aids`); each run's metrics are stored when a database is
    given. `validator` replaces the default one (for evaluations). On the embedded model
    its calls yield to customer turns (`Models.background`)."""
    from agents.summary.service import SummaryService

    models = models or configured_models(settings)
    return SummaryService(
        models.background(models.summary),
        aids=summary_aids(settings),
        model_factory=models.factory,
        validator=validator,
        sink=db.summary_runs if db is not None else None,
    )


def summary_aids(settings: Settings) -> SmallModelAids:
    """The small-model aids for the summary model: the embedded model gets completion and
    a repetition penalty; `SUMMARY_COMPLETE_COVERAGE` and `SUMMARY_GROUND_CITATIONS`
    override."""
    from agents.summary.aids.policy import SmallModelAids

    local = _summaries_on_local_model(settings)
    complete = settings.summary_complete_coverage
    return SmallModelAids(
        # A small model drops checklist lines that one short call per line recovers ...
        complete_coverage=local if complete is None else complete,
        ground_citations=settings.summary_ground_citations,
        # ... and loops more readily than hosted ones: damp repeats for it.
        repetition_penalty=LOCAL_REPETITION_PENALTY if local else None,
    )


def _summaries_on_local_model(settings: Settings) -> bool:
    """Whether summaries run on the embedded model (no SUMMARY_MODEL of their own)."""
    return uses_local_model(settings) and not settings.summary_model


def build_digest_job(
    settings: Settings,
    db: Database,
    summarizer: Summarizer,
    client: DigestPoster,
    limit: PriorityLimit | None = None,
    root: BaseAgent | None = None,
) -> DigestJob:
    """The idle-thread digest pass, configured from settings, leasing threads as this
    process (`process_owner`); in a running bot under its shared work `limit`; `root` is
    the agent tree, which names the agents that own the replies."""
    return DigestJob(
        db=db,
        summarizer=summarizer,
        client=client,
        lead_channel=settings.support_lead_channel,
        idle_after=settings.idle_after_seconds,
        concurrency=settings.digest_concurrency,
        lease_seconds=settings.digest_lease_seconds,
        owner=process_owner(),
        limit=limit,
        dead_after=settings.owner_dead_after_seconds,
        root=root,
    )
