"""The agent runtime: an ADK-style tree of LLM and workflow agents over a session log.

Independent of any transport and of the database: `storage` implements `SessionService`,
and callers hook in through callbacks and plugins (`agents.callbacks`).
"""

from agents.base_agent import BaseAgent
from agents.callbacks import BasePlugin, CallbackContext
from agents.context import InvocationContext, ReadonlyContext, ToolContext
from agents.errors import (
    AgentRuntimeError,
    AgentTreeError,
    InstructionTemplateError,
    ModelCallLimitExceeded,
    SessionStoreError,
)
from agents.events import (
    CompactionInfo,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    LoopExit,
    Part,
    Usage,
)
from agents.llm.agent import LlmAgent
from agents.runner import Runner
from agents.sessions.service import InMemorySessionService, SessionService
from agents.sessions.session import Session
from agents.tools import EXIT_LOOP, AgentTool, FunctionTool, exit_loop
from agents.workflow import LoopAgent, ParallelAgent, SequentialAgent

__all__ = [
    "EXIT_LOOP",
    "AgentRuntimeError",
    "AgentTool",
    "AgentTreeError",
    "BaseAgent",
    "BasePlugin",
    "CallbackContext",
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
    "LoopExit",
    "ModelCallLimitExceeded",
    "ParallelAgent",
    "Part",
    "ReadonlyContext",
    "Runner",
    "SequentialAgent",
    "Session",
    "SessionService",
    "SessionStoreError",
    "ToolContext",
    "Usage",
    "exit_loop",
]
