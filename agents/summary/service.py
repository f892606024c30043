"""SummaryService: render, summarise, validate, retry once, and never return unchecked text.

Each summary builds the summariser agent (its output budget is sized to the transcript)
and runs it with an ordinary `Runner` in a fresh temporary in-memory session, deleted
afterwards so nothing accumulates. A failed validation is retried once with the problems
appended to the request; a second failure is a typed `NoSummary`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.events import Event, Usage
from agents.models.base import GenerateConfig, Model
from agents.runner import Runner
from agents.session import Session
from agents.session_service import InMemorySessionService, SessionService
from agents.summary.agent import SUMMARIZER_NAME, build_summary_agent
from agents.summary.checklist import build_checklist
from agents.summary.completion import complete_record
from agents.summary.entities import EntityExtractor
from agents.summary.metrics import (
    FALLBACK,
    NO_SESSION,
    PASSED_FIRST,
    PASSED_RETRY,
    SummaryRun,
    SummaryRunSink,
    count_attempt,
    count_run,
)
from agents.summary.record import HandoffRecord
from agents.summary.transcript import RenderedTranscript, RenderOptions, render_transcript
from agents.summary.validator import (
    ValidationResult,
    Validator,
    label_user_claims,
    parse_record,
    record_json,
)

logger = logging.getLogger(__name__)

DROPPED = "dropped entity "  # the validator's recall problem, as the seed words it
MAX_ATTEMPTS = 2  # the first answer and one retry with its problems appended
RETRY_HEADER = "Your previous answer was rejected. Fix every problem below and answer again:"


@dataclass(frozen=True)
class Attempt:
    """One model answer and what the validator made of it."""

    problems: list[str]
    usage: Usage
    cut_off: bool = False
    looped: bool = False
    malformed: bool = False
    relevance_failures: int = 0
    items: int = 0
    citations: int = 0
    valid_citations: int = 0
    completed_items: int = 0
    grounded_items: int = 0
    withheld_items: int = 0
    # What a second validator (the seed's, in evaluations) said of the same answer.
    shadow_problems: tuple[str, ...] | None = None

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class Summary:
    """A validated handoff record. `metadata` says what the rendering did to fit."""

    session_id: str
    record: HandoffRecord
    attempts: int
    usage: Usage
    problems_first_attempt: list[str]
    latency_s: float
    metadata: dict[str, Any] = field(default_factory=dict)
    attempt_log: tuple[Attempt, ...] = ()

    @property
    def no_high_value_entities(self) -> bool:
        return bool(self.metadata.get("no_high_value_entities"))


@dataclass(frozen=True)
class NoSummary:
    """No summary: both attempts failed (or there was nothing to summarise). Use the raw
    transcript or ask a human; the unchecked text is deliberately not kept."""

    session_id: str
    problems: list[str]
    attempts: int
    usage: Usage
    problems_first_attempt: list[str]
    latency_s: float
    reason: str = "validation_failed"
    metadata: dict[str, Any] = field(default_factory=dict)
    attempt_log: tuple[Attempt, ...] = ()


SummaryResult = Summary | NoSummary


def output_budget(transcript_tokens: int, *, floor: int = 512, ceiling: int = 2048) -> int:
    """Output tokens for a transcript: room for a full record without room to ramble."""
    return max(floor, min(ceiling, 256 + transcript_tokens // 2))


class SummaryService:
    """Summarises sessions into validated `HandoffRecord`s.

    `model` is a `Model` or a litellm model string (`SUMMARY_MODEL`), resolved by the
    runner's `model_factory`. `sink.add(run)` receives a `SummaryRun` per summary.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        validator: Validator | None = None,
        extractor: EntityExtractor | None = None,
        render_options: RenderOptions | None = None,
        sink: SummaryRunSink | None = None,
        model_factory: Callable[[str], Model] | None = None,
        repetition_penalty: float | None = None,
        max_output_tokens: int = 2048,
        shadow_validator: Validator | None = None,
        complete_coverage: bool = False,
    ) -> None:
        self.model = model
        self.extractor = extractor or EntityExtractor()
        self.validator = validator or Validator(extractor=self.extractor)
        self.render_options = render_options or RenderOptions()
        self.sink = sink
        self.model_factory = model_factory
        self.repetition_penalty = repetition_penalty
        self.max_output_tokens = max_output_tokens
        # Scores each first answer too, without deciding anything: for side-by-side runs.
        self.shadow_validator = shadow_validator
        # One small call per checklist line the draft missed (for small local models).
        self.complete_coverage = complete_coverage
        # Temporary summariser sessions live here only while their summary runs.
        self.session_service = InMemorySessionService()

    @property
    def model_name(self) -> str:
        return self.model if isinstance(self.model, str) else self.model.name

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

    async def summarize_events(self, events: list[Event], *, session_id: str) -> SummaryResult:
        """Summarise `events` (ids already assigned) of session `session_id`."""
        if not events:
            return await self._finish_empty(session_id, f"session {session_id} has no events")
        started = time.perf_counter()
        entities = self.extractor.extract(events)
        rendered = render_transcript(events, self.render_options, mask=entities)
        max_tokens = min(self.max_output_tokens, output_budget(rendered.tokens))
        runner = Runner(
            agent=build_summary_agent(
                self.model, max_tokens=max_tokens, repetition_penalty=self.repetition_penalty
            ),
            app_name="summarizer",
            session_service=self.session_service,
            model_factory=self.model_factory,
            max_model_calls=1,
        )
        temp = await self.session_service.create_session(
            app_name="summarizer", user_id="summarizer"
        )
        attempts: list[Attempt] = []
        checked: ValidationResult | None = None
        plan = build_checklist(events, entities, visible=rendered.text)
        hints, where = plan.text(), plan.locations()
        message = f"{rendered.fenced()}\n\n{hints}" if hints else rendered.fenced()
        try:
            for _ in range(MAX_ATTEMPTS):
                checked, attempt = await self._attempt(
                    runner, temp.id, message, events, rendered, entities, shadow=not attempts
                )
                attempts.append(attempt)
                count_attempt(checked.problems)
                if checked.passed:
                    break
                message = _retry_message(rendered, hints, checked.problems, where)
        finally:
            await self.session_service.delete_session(
                app_name="summarizer", user_id="summarizer", session_id=temp.id
            )
        assert checked is not None
        usage = sum((a.usage for a in attempts), Usage())
        metadata = {
            **rendered.metadata,
            "max_output_tokens": max_tokens,
            "high_value_entities": checked.high_value,
            "no_high_value_entities": checked.no_high_value_entities,
        }
        latency = time.perf_counter() - started
        result: SummaryResult
        if checked.passed and checked.record is not None:
            result = Summary(
                session_id=session_id,
                record=label_user_claims(checked.record, events),
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

    async def _attempt(
        self,
        runner: Runner,
        temp_session_id: str,
        message: str,
        events: list[Event],
        rendered: RenderedTranscript,
        entities: list[Any],
        *,
        shadow: bool = False,
    ) -> tuple[ValidationResult, Attempt]:
        """One model call through the runner (plus, with `complete_coverage`, the calls
        that fill the draft's gaps), validated and logged; with `shadow`, scored by the
        shadow validator too. Runner failures become problems."""
        usage = Usage()
        final: Event | None = None
        async for event in runner.run_async(
            user_id="summarizer", session_id=temp_session_id, message=message
        ):
            if event.author != SUMMARIZER_NAME:
                continue
            if event.usage is not None:
                usage = usage + event.usage
            final = event
        # "invalid_output" is the agent's own schema check; the validator names it better.
        if final is None or final.error_code not in (None, "invalid_output"):
            code = final.error_code if final is not None else "no_answer"
            detail = (final.error_message or "") if final is not None else ""
            failed = ValidationResult(record=None, malformed=True)
            failed.problems.append(f"model call failed ({code}): {detail[:200]}")
            return failed, _attempt_log(failed, usage, tuple(failed.problems) if shadow else None)
        text, completed = final.text, 0
        if self.complete_coverage:
            text, completed, extra = await self._complete(text, events, rendered, entities)
            usage = usage + extra
        checked = self.validator.validate(
            text,
            events,
            rendered=rendered,
            entities=entities,
            finish_reason=final.finish_reason,
        )
        shadow_problems = None
        if shadow and self.shadow_validator is not None:
            shadow_problems = tuple(
                self.shadow_validator.validate(
                    text,
                    events,
                    rendered=rendered,
                    entities=entities,
                    finish_reason=final.finish_reason,
                ).problems
            )
        return checked, _attempt_log(checked, usage, shadow_problems, completed)

    async def _complete(
        self,
        text: str,
        events: list[Event],
        rendered: RenderedTranscript,
        entities: list[Any],
    ) -> tuple[str, int, Usage]:
        """The draft with its checklist gaps filled (`agents.summary.completion`); a draft
        that does not parse is returned as it is, for the validator to name."""
        record = parse_record(text)
        model = self._resolved_model()
        if record is None or model is None:
            return text, 0, Usage()
        config = GenerateConfig(temperature=0.0, repetition_penalty=self.repetition_penalty)
        done = await complete_record(model, record, events, rendered, entities, config=config)
        if not done.added:
            return text, 0, done.usage
        return record_json(done.record), done.added, done.usage

    def _resolved_model(self) -> Model | None:
        if not isinstance(self.model, str):
            return self.model
        return self.model_factory(self.model) if self.model_factory is not None else None

    async def _finish_empty(self, session_id: str, problem: str) -> NoSummary:
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


def _retry_message(
    rendered: RenderedTranscript,
    hints: str,
    problems: list[str],
    where: dict[str, str] | None = None,
) -> str:
    """The same request with the problems appended; a dropped value says where it is.

    The rejected answer is deliberately not shown: measured on the embedded model, a
    small model shown its answer copies it, problems and all, instead of fixing it.
    """
    where = where or {}
    named = []
    for problem in problems[:30]:
        value = problem.removeprefix(DROPPED)
        if problem.startswith(DROPPED) and value.casefold() in where:
            problem += f": add an item citing {where[value.casefold()]} that states it"
        named.append(problem)
    listed = "\n".join(f"- {p}" for p in named)
    body = f"{rendered.fenced()}\n\n{hints}" if hints else rendered.fenced()
    return f"{body}\n\n{RETRY_HEADER}\n{listed}"


def _attempt_log(
    checked: ValidationResult,
    usage: Usage,
    shadow: tuple[str, ...] | None = None,
    completed: int = 0,
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
        completed_items=completed,
        grounded_items=checked.grounded_items,
        withheld_items=checked.withheld_items,
        shadow_problems=shadow,
    )
