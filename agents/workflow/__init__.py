"""Workflow agents: run children in a fixed pattern, with no model call of their own."""

from agents.workflow.loop import LoopAgent
from agents.workflow.parallel import ParallelAgent
from agents.workflow.sequential import SequentialAgent

__all__ = ["LoopAgent", "ParallelAgent", "SequentialAgent"]
