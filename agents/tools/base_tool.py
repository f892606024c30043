"""The tool contract: a declaration the model reads, and an async run."""

from __future__ import annotations

from typing import Any

from agents.context import ToolContext
from agents.models.base import ToolDeclaration


class ToolError(Exception):
    """A tool failed in a way the calling model should see and may recover from."""


class BaseTool:
    """A function the model may call. Subclasses implement `declaration` and `run`."""

    name: str
    description: str = ""

    def declaration(self) -> ToolDeclaration:
        raise NotImplementedError

    async def run(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        raise NotImplementedError
