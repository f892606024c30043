"""Tools an LlmAgent can call: Python functions, other agents, and loop control."""

from agents.context import ToolContext
from agents.tools.agent_tool import AgentTool
from agents.tools.base_tool import BaseTool, ToolError
from agents.tools.exit_loop import EXIT_LOOP, exit_loop
from agents.tools.function_tool import FunctionTool

__all__ = [
    "EXIT_LOOP",
    "AgentTool",
    "BaseTool",
    "FunctionTool",
    "ToolContext",
    "ToolError",
    "exit_loop",
]
