"""The summary agent: cited handoff records, a deterministic validator, one retry.

`SummaryService(model, aids=SmallModelAids(...)).summarize(session)` returns a validated
`Summary` or a typed `NoSummary`; never unchecked text. Problems are typed `Problem`s.
`IncrementalSummarizer(service, store, interval=...)` builds the same records window by
window as the thread goes and merges them (`merge_records`), naming any `WindowGap`.
Render a record with `to_text` or `to_json`; transports build their own views from it.
"""

from agents.summary.agent import INSTRUCTION, SUMMARIZER_NAME, build_summary_agent
from agents.summary.aids.policy import SmallModelAids
from agents.summary.checks.claims import label_user_claims
from agents.summary.checks.validator import ValidationResult, Validator
from agents.summary.entities import Entity, EntityExtractor, EntityPattern, pattern
from agents.summary.incremental import IncrementalSummarizer
from agents.summary.merge import merge_records
from agents.summary.metrics import SummaryRun, SummaryRunSink
from agents.summary.problems import Problem, ProblemKind
from agents.summary.record import (
    MAX_SOURCES,
    HandoffRecord,
    Item,
    response_schema,
)
from agents.summary.render import to_json, to_text
from agents.summary.results import Attempt, NoSummary, Summary, SummaryResult, WindowGap
from agents.summary.service import SummaryService
from agents.summary.transcript import RenderedTranscript, RenderOptions, render_transcript

__all__ = [
    "INSTRUCTION",
    "MAX_SOURCES",
    "SUMMARIZER_NAME",
    "Attempt",
    "Entity",
    "EntityExtractor",
    "EntityPattern",
    "HandoffRecord",
    "IncrementalSummarizer",
    "Item",
    "NoSummary",
    "Problem",
    "ProblemKind",
    "RenderOptions",
    "RenderedTranscript",
    "SmallModelAids",
    "Summary",
    "SummaryResult",
    "SummaryRun",
    "SummaryRunSink",
    "SummaryService",
    "ValidationResult",
    "Validator",
    "WindowGap",
    "build_summary_agent",
    "label_user_claims",
    "merge_records",
    "pattern",
    "render_transcript",
    "response_schema",
    "to_json",
    "to_text",
]
