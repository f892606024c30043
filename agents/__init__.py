"""The agent runtime: an ADK-style tree of LLM and workflow agents over a session log.

Independent of Slack and of the database; `storage` implements `SessionService`.
"""

from agents.base_agent import BaseAgent
from agents.context import InvocationContext, ReadonlyContext, ToolContext
from agents.errors import (
    AgentRuntimeError,
    AgentTreeError,
    InstructionTemplateError,
    ModelCallLimitExceeded,
)
from agents.events import (
    CompactionInfo,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    Part,
    Usage,
)
from agents.llm_agent import LlmAgent
from agents.runner import Runner
from agents.session import Session
from agents.session_service import InMemorySessionService, SessionService
from agents.tools import EXIT_LOOP, AgentTool, FunctionTool, exit_loop
from agents.workflow import LoopAgent, ParallelAgent, SequentialAgent

__all__ = [
    "EXIT_LOOP",
    "AgentRuntimeError",
    "AgentTool",
    "AgentTreeError",
    "BaseAgent",
    "CompactionInfo",
    "Event",
    "EventActions",
    "FunctionCall",
    "FunctionResponse",
    "FunctionTool",
    "InMemorySessionService",
    "InstructionTemplateError",
    "InvocationContext",
    "LlmAgent",
    "LoopAgent",
    "ModelCallLimitExceeded",
    "ParallelAgent",
    "Part",
    "ReadonlyContext",
    "Runner",
    "SequentialAgent",
    "Session",
    "SessionService",
    "ToolContext",
    "Usage",
    "exit_loop",
]
