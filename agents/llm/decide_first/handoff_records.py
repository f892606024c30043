"""The history entries that only record a hand-off, which a decide-first step leaves out."""

from __future__ import annotations

from agents.history import FOREIGN_PREFIX
from agents.llm.transfer import TRANSFER_TOOL
from agents.models.base import Content, LlmRequest


def without_handoff_records(request: LlmRequest) -> LlmRequest:
    """`request` without the history entries that only record a transfer (see
    `_transfer_only`), for models that decide first."""
    contents = [c for c in request.contents if not _transfer_only(c)]
    return request.model_copy(update={"contents": contents})


def _transfer_only(content: Content) -> bool:
    """A history entry that only records a transfer (the hand-off's call and result, own or
    another agent's): it tells the next agent nothing about the request, and a small model
    reading it writes about transfers instead of answering."""
    if any(p.function_call and p.function_call.name != TRANSFER_TOOL for p in content.parts):
        return False
    if any(
        p.function_response and p.function_response.name != TRANSFER_TOOL for p in content.parts
    ):
        return False
    if any(p.function_call or p.function_response for p in content.parts):
        return True
    lines = [line for line in content.text.splitlines()[1:] if line.strip()]
    marker = f"`{TRANSFER_TOOL}`"
    return (
        content.text.startswith(FOREIGN_PREFIX)
        and bool(lines)
        and all(marker in line for line in lines)
    )
