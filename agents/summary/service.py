"""SummaryService: render, summarise, repair, validate, retry once; never unchecked text.

Each summary builds the summariser agent (its output budget is sized to the transcript)
and asks it through `ModelCalls` (an ordinary `Runner` over a temporary session). The
parsed draft goes through the model's `SmallModelAids` repairs, then the validator. A
failed validation is retried once with the problems appended to the request; a second
failure is a typed `NoSummary`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace

from agents.events import Event, Usage
from agents.models.base import Model
from agents.sessions.service import SessionService
from agents.sessions.session import Session
from agents.summary.agent import build_summary_agent
from agents.summary.aids.policy import SmallModelAids
from agents.summary.call import Ask, ModelCalls
from agents.summary.checks.claims import label_user_claims
from agents.summary.checks.validator import ValidationResult, Validator
from agents.summary.context_citations import without_context_citations
from agents.summary.entities import Entity, EntityExtractor
from agents.summary.metrics import (
    FALLBACK,
    NO_SESSION,
    PASSED_FIRST,
    PASSED_RETRY,
    SummaryRun,
    SummaryRunSink,
    count_attempt,
    count_repairs,
    count_run,
)
from agents.summary.problems import Problem, ProblemKind
from agents.summary.results import Attempt, NoSummary, Summary, SummaryResult
from agents.summary.retry import first_message, retry_message
from agents.summary.secrets import secrets_within, with_secrets
from agents.summary.transcript import RenderedTranscript, RenderOptions, render_transcript

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 2  # the first answer and one retry with its problems appended


def output_budget(transcript_tokens: int, *, floor: int = 512, ceiling: int = 2048) -> int:
    """Output tokens for a transcript: room for a full record without room to ramble."""
    return max(floor, min(ceiling, 256 + transcript_tokens // 2))


class SummaryService:
    """Summarises sessions into validated `HandoffRecord`s.

    `model` is a `Model` or a litellm model string (`SUMMARY_MODEL`), resolved by
    `model_factory`. `aids` is what this model gets to help it (see `SmallModelAids`).
    `sink.add(run)` receives a `SummaryRun` per summary.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        aids: SmallModelAids | None = None,
        validator: Validator | None = None,
        extractor: EntityExtractor | None = None,
        render_options: RenderOptions | None = None,
        sink: SummaryRunSink | None = None,
        model_factory: Callable[[str], Model] | None = None,
    ) -> None:
        self.model = model
        self.aids = aids or SmallModelAids()
        self.extractor = extractor or EntityExtractor()
        self.validator = validator or Validator(extractor=self.extractor)
        self.render_options = render_options or RenderOptions()
        self.sink = sink
        self.calls = ModelCalls(model_factory)

    @property
    def model_name(self) -> str:
        return self.model if isinstance(self.model, str) else self.model.name

    def rendering(
        self,
        events: list[Event],
        entities: list[Entity] | None = None,
        *,
        secrets: Sequence[Entity] = (),
    ) -> RenderedTranscript:
        """The transcript of `events` as this service shows it to the model (secrets
        masked, those of `secrets` too, payloads within `render_options`): what the
        validator may demand of it."""
        if entities is None:
            entities = self.entities(events, secrets)
        return render_transcript(events, self.render_options, mask=entities)

    def entities(self, events: list[Event], secrets: Sequence[Entity] = ()) -> list[Entity]:
        """The entities of `events`, every value of `secrets` (the whole thread's, found
        by `agents.summary.secrets`) among them sensitive."""
        return with_secrets(self.extractor.extract(events), secrets_within(secrets, events))

    async def summarize_session(
        self, session_service: SessionService, *, app_name: str, user_id: str, session_id: str
    ) -> SummaryResult:
        """Load a session (every event) and summarise it; a missing one is a `NoSummary`."""
        session = await session_service.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
        if session is None:
            return await self._finish_empty(session_id, f"session {session_id} does not exist")
        return await self.summarize(session)

    async def summarize(self, session: Session) -> SummaryResult:
        """Summarise a loaded session."""
        return await self.summarize_events(session.events, session_id=session.id)

    async def summarize_events(
        self,
        events: list[Event],
        *,
        session_id: str,
        context: str = "",
        goal_support: Sequence[Event] = (),
        context_marks: Collection[str] = (),
        secrets: Sequence[Entity] = (),
    ) -> SummaryResult:
        """Summarise `events` (ids already assigned) of session `session_id`. `secrets`
        are the whole thread's sensitive values, masked wherever `events` hold them. `context`
        is quoted text shown before the transcript (what a window needs of the thread's
        earlier events); the record may cite only `events`, and its goal may also draw
        on `goal_support` (the events before a window). `context_marks` are the labels
        of the context's fenced blocks: a source naming one is no citation
        (`agents.summary.context_citations`)."""
        if not events:
            return await self._finish_empty(session_id, f"session {session_id} has no events")
        started = time.perf_counter()
        entities = self.entities(events, secrets)
        rendered = self.rendering(events, entities)
        max_tokens = output_budget(rendered.tokens)
        plan = self.aids.plan(events, entities, rendered)
        attempts: list[Attempt] = []
        checked: ValidationResult | None = None
        async with self.calls.session() as ask:
            message = first_message(rendered, plan, context)
            for _ in range(MAX_ATTEMPTS):
                checked, attempt = await self._attempt(
                    ask,
                    message,
                    max_tokens,
                    events,
                    rendered,
                    entities,
                    goal_support,
                    context_marks,
                )
                attempts.append(attempt)
                count_attempt(checked.problems)
                count_repairs(attempt)
                if checked.passed:
                    break
                message = retry_message(rendered, plan, checked.problems, context)
        assert checked is not None
        metadata = {
            **rendered.metadata,
            "max_output_tokens": max_tokens,
            "high_value_entities": list(checked.high_value),
            "no_high_value_entities": checked.no_high_value_entities,
        }
        return await self._finish(
            session_id, events, checked, attempts, metadata, time.perf_counter() - started
        )

    async def _attempt(
        self,
        ask: Ask,
        message: str,
        max_tokens: int,
        events: list[Event],
        rendered: RenderedTranscript,
        entities: list[Entity],
        goal_support: Sequence[Event] = (),
        context_marks: Collection[str] = (),
    ) -> tuple[ValidationResult, Attempt]:
        """One draft: asked, parsed once, repaired by the aids, validated. A failed call
        is a problem of its own."""
        agent = build_summary_agent(
            self.model, max_tokens=max_tokens, repetition_penalty=self.aids.repetition_penalty
        )
        answer = await ask(agent, message)
        if answer.failed:
            detail = f"model call failed ({answer.error_code}): {answer.error_message[:200]}"
            problem = Problem(ProblemKind.MODEL_ERROR, (), detail)
            failed = ValidationResult(record=None, problems=[problem], malformed=True)
            return failed, _attempt_log(failed, answer.usage)
        parsed = self.validator.parse(answer.text, finish_reason=answer.finish_reason)
        usage, repaired = answer.usage, None
        if parsed.record is not None and context_marks:
            parsed = replace(parsed, record=without_context_citations(parsed.record, context_marks))
        if parsed.record is not None:
            repaired = await self.aids.repair(
                parsed.record,
                ask=ask,
                model=self.model,
                events=events,
                rendered=rendered,
                entities=entities,
                extractor=self.extractor,
            )
            usage = usage + repaired.usage
            parsed = replace(parsed, record=repaired.record)
        checked = self.validator.check(
            parsed, events, rendered=rendered, entities=entities, goal_support=goal_support
        )
        if repaired is None:
            return checked, _attempt_log(checked, usage)
        return checked, _attempt_log(
            checked,
            usage,
            copied=repaired.copied,
            recited=repaired.recited,
            unsupported=repaired.unsupported,
            answered=repaired.answered,
            completed=repaired.completed,
            quoted=repaired.quoted,
            grounded=repaired.grounded,
            withheld=repaired.withheld,
        )

    async def _finish(
        self,
        session_id: str,
        events: list[Event],
        checked: ValidationResult,
        attempts: list[Attempt],
        metadata: dict[str, object],
        latency: float,
    ) -> SummaryResult:
        """The result of the attempts, recorded."""
        usage = sum((a.usage for a in attempts), Usage())
        result: SummaryResult
        if checked.passed and checked.record is not None:
            result = Summary(
                session_id=session_id,
                record=label_user_claims(checked.record, events, extractor=self.extractor),
                attempts=len(attempts),
                usage=usage,
                problems_first_attempt=attempts[0].problems,
                latency_s=latency,
                metadata=metadata,
                attempt_log=tuple(attempts),
            )
            outcome = PASSED_FIRST if len(attempts) == 1 else PASSED_RETRY
        else:
            result = NoSummary(
                session_id=session_id,
                problems=checked.problems,
                attempts=len(attempts),
                usage=usage,
                problems_first_attempt=attempts[0].problems,
                latency_s=latency,
                metadata=metadata,
                attempt_log=tuple(attempts),
            )
            outcome = FALLBACK
        await self._record(
            SummaryRun(
                session_id=session_id,
                first_attempt_pass=attempts[0].passed,
                fallback=outcome == FALLBACK,
                attempts=len(attempts),
                problems=[p for a in attempts for p in a.problems],
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cost=usage.cost,
                latency_s=latency,
                model=self.model_name,
                outcome=outcome,
                no_high_value_entities=checked.no_high_value_entities,
            )
        )
        return result

    async def _finish_empty(self, session_id: str, message: str) -> NoSummary:
        problem = Problem(ProblemKind.NO_SESSION, (session_id,), message)
        run = SummaryRun(
            session_id=session_id,
            first_attempt_pass=False,
            fallback=True,
            attempts=0,
            problems=[problem],
            model=self.model_name,
            outcome=NO_SESSION,
        )
        await self._record(run)
        return NoSummary(
            session_id=session_id,
            problems=[problem],
            attempts=0,
            usage=Usage(),
            problems_first_attempt=[problem],
            latency_s=0.0,
            reason="no_session",
        )

    async def _record(self, run: SummaryRun) -> None:
        count_run(run)
        if self.sink is None:
            return
        try:
            await self.sink.add(run)
        except Exception:
            # Losing one metrics row must not lose the summary it describes.
            logger.warning("summary run sink failed for %s", run.session_id, exc_info=True)


def _attempt_log(
    checked: ValidationResult,
    usage: Usage,
    *,
    copied: int = 0,
    recited: int = 0,
    unsupported: int = 0,
    answered: int = 0,
    completed: int = 0,
    quoted: int = 0,
    grounded: int = 0,
    withheld: int = 0,
) -> Attempt:
    record = checked.record
    items = record.items() if record is not None else []
    return Attempt(
        problems=list(checked.problems),
        usage=usage,
        cut_off=checked.cut_off,
        looped=checked.looped,
        malformed=checked.malformed,
        relevance_failures=checked.relevance_failures,
        items=len(items),
        citations=sum(len(item.sources) for _, _, item in items),
        valid_citations=checked.valid_citations,
        copied_items=copied,
        recited_items=recited,
        unsupported_items=unsupported,
        answered_items=answered,
        completed_items=completed,
        quoted_items=quoted,
        grounded_items=grounded,
        withheld_items=withheld,
    )
