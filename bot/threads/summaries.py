"""Thread summaries for every transport: run the summary agent and return what it
validated, as a record and plain text.

The summariser is any `Summarizer`: `agents.summary.SummaryService`, or a test double
of its shape. Unchecked text is never returned: without a record, the outcome carries
only the problems a person may see. Each transport renders the outcome itself (Slack's
Block Kit in `bot.slack.render.summary_blocks`, the terminal's plain text).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Protocol

from agents.knowledge.thread_sources import thread_sources
from agents.sessions.session import Session
from agents.summary import SummaryResult
from agents.summary.metrics import DeliverySink, count_delivery
from agents.summary.record import HandoffRecord
from agents.summary.render import to_text
from agents.summary.results import WindowGap

log = logging.getLogger(__name__)

# A failed model call names its error code; the provider's own words (host names, key
# fragments) go to the logs only.
_MODEL_FAILURE = re.compile(r"^(model call failed \([\w.-]{1,64}\))")


class Summarizer(Protocol):
    """Summarises a session into a validated record or a typed no-summary."""

    async def summarize(self, session: Session) -> SummaryResult:
        """A `Summary` with a validated `record`, or a `NoSummary` with its `problems`."""
        ...


@dataclass(frozen=True)
class ThreadSummary:
    """One session's summary outcome, before any transport renders it.

    With a validated `record`: the windows it lacks (`gaps` of `windows`) and the tail
    it left `unsummarised`. Without one: the `problems` a person may see. `plain` is
    the outcome as plain text either way.
    """

    session: Session
    record: HandoffRecord | None
    plain: str
    problems: tuple[str, ...] = ()
    gaps: tuple[WindowGap, ...] = ()
    windows: int = 0
    unsummarised: WindowGap | None = None

    @property
    def ok(self) -> bool:
        """Whether a record passed validation."""
        return self.record is not None


async def summarize_session(
    summarizer: Summarizer,
    session: Session,
    *,
    surface: str,
    deliveries: DeliverySink | None = None,
) -> ThreadSummary:
    """Run `summarizer` on `session`: the validated record, or why there is none. What
    `surface` (`summary` or `handoff`) receives is counted, and stored in `deliveries`."""
    result = await summarizer.summarize(session)
    await count_delivery(result, surface, deliveries)
    record = getattr(result, "record", None)
    if isinstance(record, HandoffRecord):
        gaps = tuple(getattr(result, "gaps", ()))
        windows = int(getattr(result, "windows", 0))
        tail = getattr(result, "unsummarised", None)
        plain = to_text(
            record,
            source_session_id=session.id,
            gaps=gaps,
            windows=windows,
            unsummarised=tail,
            sources=thread_sources(session.events),
        )
        return ThreadSummary(
            session=session,
            record=record,
            plain=plain,
            gaps=gaps,
            windows=windows,
            unsummarised=tail,
        )
    raw = tuple(str(p) for p in getattr(result, "problems", ()) or ("no summary",))
    problems = public_problems(raw)
    return ThreadSummary(
        session=session,
        record=None,
        plain=f"No validated summary. Problems: {'; '.join(problems)}",
        problems=problems,
    )


def public_problems(problems: tuple[str, ...]) -> tuple[str, ...]:
    """What a person may see of why a summary failed: validation problems as they are,
    a failed model call as its error code only (the detail is logged)."""
    shown = []
    for problem in problems:
        failure = _MODEL_FAILURE.match(problem)
        if failure is not None:
            log.warning("summary model call failed: %s", problem)
            problem = failure.group(1)
        shown.append(problem)
    return tuple(shown)
