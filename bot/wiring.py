"""The agent engine the bot drives, built from settings on the process's models
(`bot.models`: which model, decided there for every entry point): runner, tree and
summariser::

    async with open_models(settings) as models:
        runner = build_runner(settings, db, models)
        summarizer = build_summarizer(settings, db, models)

`TOOL_DECISION`, `DECISION_SCORING` and `DECISION_LAYOUTS` make each model's profile
(`bot.models.profile_settings`); the output caps `MAX_OUTPUT_TOKENS` /
`TOOL_AGENT_MAX_OUTPUT_TOKENS` apply to every model of the tree.

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
from typing import TYPE_CHECKING

from agents.base_agent import BaseAgent
from agents.compaction import Compactor, EventsCompactionConfig, LlmEventSummarizer
from agents.knowledge.search import KnowledgeSearch
from agents.models.base import Model
from agents.runner import AfterInvocationHook, Runner
from agents.sessions.service import SessionService
from agents.tree import OutputBudget, build_support_tree
from bot.config import Settings
from bot.digests.job import DigestJob
from bot.digests.posting import DigestPoster
from bot.models import Models, configured_models, uses_local_model
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

LOCAL_REPETITION_PENALTY = 1.05


@functools.cache
def process_owner() -> str:
    """This process's identity, the same for everything it owns: the messages it has
    accepted (`storage.delivery.inflight`) and the digest leases it holds (`storage.threads`).
    Random per start, so a restarted process takes over what its predecessor left."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


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
