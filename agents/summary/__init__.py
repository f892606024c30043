"""The summary agent: cited handoff records, a deterministic validator, one retry.

`SummaryService(model).summarize(session)` returns a validated `Summary` or a typed
`NoSummary`; never unchecked text. Render a record with `to_text`, `to_blocks`, `to_json`.
"""

from agents.summary.agent import INSTRUCTION, SUMMARIZER_NAME, build_summary_agent
from agents.summary.entities import Entity, EntityExtractor, EntityPattern, pattern
from agents.summary.metrics import SummaryRun, SummaryRunSink
from agents.summary.record import MAX_SOURCES, HandoffRecord, Item, response_schema
from agents.summary.render import to_blocks, to_json, to_text
from agents.summary.service import Attempt, NoSummary, Summary, SummaryResult, SummaryService
from agents.summary.transcript import RenderedTranscript, RenderOptions, render_transcript
from agents.summary.validator import ValidationResult, Validator, label_user_claims

__all__ = [
    "INSTRUCTION",
    "MAX_SOURCES",
    "SUMMARIZER_NAME",
    "Attempt",
    "Entity",
    "EntityExtractor",
    "EntityPattern",
    "HandoffRecord",
    "Item",
    "NoSummary",
    "RenderOptions",
    "RenderedTranscript",
    "Summary",
    "SummaryResult",
    "SummaryRun",
    "SummaryRunSink",
    "SummaryService",
    "ValidationResult",
    "Validator",
    "build_summary_agent",
    "label_user_claims",
    "pattern",
    "render_transcript",
    "response_schema",
    "to_blocks",
    "to_json",
    "to_text",
]
