"""`exit_loop`: the ready-made escalate tool for a LoopAgent's checker."""

from __future__ import annotations

from agents.context import ToolContext
from agents.tools.function_tool import FunctionTool


def exit_loop(tool_context: ToolContext) -> dict[str, str]:
    """Call this when the work meets every requirement, to stop the enclosing loop."""
    tool_context.actions.escalate = True
    return {"status": "done"}


EXIT_LOOP = FunctionTool(exit_loop)
