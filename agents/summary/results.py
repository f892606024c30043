"""What a summary run returns: a validated `Summary` or a `NoSummary`, with each attempt."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.events import Usage
from agents.summary.problems import Problem
from agents.summary.record import HandoffRecord


@dataclass(frozen=True)
class Attempt:
    """One model answer, what the repairs did to it and what the validator made of it."""

    problems: list[Problem]
    usage: Usage
    cut_off: bool = False
    looped: bool = False
    malformed: bool = False
    relevance_failures: int = 0
    items: int = 0
    citations: int = 0
    valid_citations: int = 0
    copied_items: int = 0
    recited_items: int = 0
    unsupported_items: int = 0
    answered_items: int = 0
    completed_items: int = 0
    quoted_items: int = 0
    grounded_items: int = 0
    withheld_items: int = 0

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class WindowGap:
    """A window of the thread no validated record covers: its first and last event ids
    and why it failed. Its events are read in the thread itself."""

    start_id: str
    end_id: str
    problems: tuple[str, ...] = ()

    def label(self) -> str:
        """`e12–e20`."""
        return self.start_id if self.start_id == self.end_id else f"{self.start_id}–{self.end_id}"


@dataclass(frozen=True)
class Summary:
    """A validated handoff record. `metadata` says what the rendering did to fit.

    A record merged from window records (`SUMMARY_MODE=incremental`) counts its
    `windows` and names its `gaps`: windows whose events no validated record covers.
    `unsummarised` is the thread's open tail when it holds no value or promise: left for
    the next window, not summarised, read in the thread.
    """

    session_id: str
    record: HandoffRecord
    attempts: int
    usage: Usage
    problems_first_attempt: list[Problem]
    latency_s: float
    metadata: dict[str, Any] = field(default_factory=dict)
    attempt_log: tuple[Attempt, ...] = ()
    windows: int = 0
    gaps: tuple[WindowGap, ...] = ()
    unsummarised: WindowGap | None = None

    @property
    def no_high_value_entities(self) -> bool:
        return bool(self.metadata.get("no_high_value_entities"))


@dataclass(frozen=True)
class NoSummary:
    """No summary: both attempts failed (or there was nothing to summarise). Use the raw
    transcript or ask a human; the unchecked text is deliberately not kept."""

    session_id: str
    problems: list[Problem]
    attempts: int
    usage: Usage
    problems_first_attempt: list[Problem]
    latency_s: float
    reason: str = "validation_failed"
    metadata: dict[str, Any] = field(default_factory=dict)
    attempt_log: tuple[Attempt, ...] = ()


SummaryResult = Summary | NoSummary
