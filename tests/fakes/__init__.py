"""Fakes of external services for tests: only Slack and hosted LLMs are ever faked."""

from tests.fakes.openai_server import (
    FakeOpenAIServer,
    RecordedRequest,
    Reply,
    completion,
    error,
    json_reply,
    text,
    tool_call,
    tool_call_reply,
)

__all__ = [
    "FakeOpenAIServer",
    "RecordedRequest",
    "Reply",
    "completion",
    "error",
    "json_reply",
    "text",
    "tool_call",
    "tool_call_reply",
]
