"""Build an agent tree from YAML, so a team can change its tree without code.

Every reference to an agent builds a new instance (a factory per name), so no instance
is ever shared between two parents. AgentTool children get their own instances too.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from agents.base_agent import BaseAgent
from agents.errors import AgentTreeError
from agents.knowledge.search import KnowledgeSearch
from agents.llm.agent import LlmAgent
from agents.models.base import GenerateConfig, Model
from agents.tools import AgentTool, BaseTool, FunctionTool
from agents.tools.knowledge_search import KnowledgeSearchTool
from agents.workflow import LoopAgent, ParallelAgent, SequentialAgent

DEFAULT_TREE = Path(__file__).with_name("support_tree.yaml")

_LLM_KEYS = {
    "type", "description", "instruction", "model", "tools", "sub_agents", "output_key",
    "include_contents", "disallow_transfer_to_parent", "disallow_transfer_to_peers",
    "generate_config", "examples", "knowledge",
}  # fmt: skip
_WORKFLOW_KEYS = {"type", "description", "sub_agents", "max_iterations", "examples"}
MAX_EXAMPLES = 10
"""Routing examples an agent may declare: a few, not a training set."""
MAX_EXAMPLE_CHARS = 200
"""A routing example is one short request, as a customer would write it."""


@dataclass(frozen=True)
class OutputBudget:
    """Default output token caps for LLM agents whose `generate_config` sets no
    `max_tokens`: `agent` for agents that answer the user, `tool_agent` for agents
    consulted through AgentTool (short, tool-like answers). None leaves calls uncapped.

    A cap keeps one runaway answer from holding a single-slot local server for minutes:
    the answer is cut at the cap (counted in `support_bot_output_cut_total`) and used.
    """

    agent: int | None = 400
    tool_agent: int | None = 120


class TreeSpec:
    """A parsed tree definition: a root name and one spec per agent name."""

    def __init__(self, data: Mapping[str, Any], *, source: str = "<tree>") -> None:
        agents = data.get("agents")
        root = data.get("root")
        if not isinstance(agents, Mapping) or not agents:
            raise AgentTreeError(f"{source}: 'agents' must map names to agent specs")
        if not isinstance(root, str) or root not in agents:
            raise AgentTreeError(f"{source}: root {root!r} is not defined under 'agents'")
        self.root = root
        self.agents: dict[str, dict[str, Any]] = {k: dict(v) for k, v in agents.items()}
        self.source = source
        self._budget = OutputBudget()
        self._knowledge: KnowledgeSearch | None = None
        for name, spec in self.agents.items():
            kind = spec.get("type", "llm")
            allowed = _LLM_KEYS if kind == "llm" else _WORKFLOW_KEYS
            if kind not in ("llm", "sequential", "parallel", "loop"):
                raise AgentTreeError(f"{source}: agent {name!r} has unknown type {kind!r}")
            unknown = set(spec) - allowed
            if unknown:
                raise AgentTreeError(f"{source}: agent {name!r} has unknown keys {sorted(unknown)}")
            spec["examples"] = _examples(spec.get("examples", []), f"{source}: agent {name!r}")

    @classmethod
    def from_file(cls, path: str | Path) -> TreeSpec:
        path = Path(path)
        return cls(yaml.safe_load(path.read_text(encoding="utf-8")) or {}, source=str(path))

    def build(
        self,
        *,
        model: Model | str | None = None,
        output_budget: OutputBudget | None = None,
        knowledge: KnowledgeSearch | None = None,
    ) -> BaseAgent:
        """A fresh tree. `model` is the default for LLM agents that name none;
        `output_budget` caps the output of those whose `generate_config` has no `max_tokens`;
        `knowledge` gives agents that declare `knowledge: [collection, ...]` a search tool
        over those collections (without it, the declarations add nothing)."""
        self._budget = output_budget or OutputBudget()
        self._knowledge = knowledge
        return self._build(self.root, model, stack=())

    def _build(
        self, name: str, model: Model | str | None, stack: tuple[str, ...], *, tool: bool = False
    ) -> BaseAgent:
        if name in stack:
            raise AgentTreeError(f"{self.source}: agent {name!r} contains itself via {stack}")
        spec = self.agents.get(name)
        if spec is None:
            raise AgentTreeError(f"{self.source}: unknown agent {name!r}")
        stack = (*stack, name)
        children = [
            self._build(child, model, stack, tool=tool) for child in spec.get("sub_agents", [])
        ]
        agent = self._agent(name, spec, children, model, stack, tool=tool)
        agent.examples = spec["examples"]
        return agent

    def _agent(
        self,
        name: str,
        spec: Mapping[str, Any],
        children: list[BaseAgent],
        model: Model | str | None,
        stack: tuple[str, ...],
        *,
        tool: bool,
    ) -> BaseAgent:
        kind = spec.get("type", "llm")
        description = spec.get("description", "")
        if kind == "sequential":
            return SequentialAgent(name=name, description=description, sub_agents=children)
        if kind == "parallel":
            return ParallelAgent(name=name, description=description, sub_agents=children)
        if kind == "loop":
            return LoopAgent(
                name=name,
                description=description,
                sub_agents=children,
                max_iterations=int(spec.get("max_iterations", 0)),
            )
        return LlmAgent(
            name=name,
            description=description,
            model=spec.get("model") or model,
            instruction=spec.get("instruction", ""),
            tools=[
                *(self._tool(t, model, stack) for t in spec.get("tools", [])),
                *self._knowledge_tool(name, spec),
            ],
            sub_agents=children,
            output_key=spec.get("output_key"),
            include_contents=spec.get("include_contents", "default"),
            disallow_transfer_to_parent=bool(spec.get("disallow_transfer_to_parent", False)),
            disallow_transfer_to_peers=bool(spec.get("disallow_transfer_to_peers", False)),
            generate_config=self._generate_config(spec, tool=tool),
        )

    def _knowledge_tool(self, name: str, spec: Mapping[str, Any]) -> list[BaseTool]:
        collections = spec.get("knowledge") or []
        if not isinstance(collections, list) or not all(isinstance(c, str) for c in collections):
            raise AgentTreeError(f"{self.source}: agent {name!r}: knowledge must list collections")
        if not collections or self._knowledge is None:
            return []
        return [KnowledgeSearchTool(self._knowledge, collections)]

    def _generate_config(self, spec: Mapping[str, Any], *, tool: bool) -> GenerateConfig:
        values = dict(spec.get("generate_config", {}))
        cap = self._budget.tool_agent if tool else self._budget.agent
        if values.get("max_tokens") is None and cap is not None:
            values["max_tokens"] = cap
        return GenerateConfig(**values)

    def _tool(self, ref: Any, model: Model | str | None, stack: tuple[str, ...]) -> BaseTool:
        if isinstance(ref, Mapping) and "agent_tool" in ref:
            child = self._build(str(ref["agent_tool"]), model, stack, tool=True)
            return AgentTool(
                child,
                skip_summarization=bool(ref.get("skip_summarization", False)),
                consult_before=str(ref.get("consult_before") or ""),
            )
        if isinstance(ref, str) and ":" in ref:
            module_name, _, attr = ref.partition(":")
            try:
                target = getattr(importlib.import_module(module_name), attr)
            except (ImportError, AttributeError) as exc:
                raise AgentTreeError(f"{self.source}: cannot import tool {ref!r}: {exc}") from exc
            return target if isinstance(target, BaseTool) else FunctionTool(target)
        raise AgentTreeError(f"{self.source}: a tool must be 'module:attr' or {{agent_tool: name}}")


def _examples(value: Any, where: str) -> tuple[str, ...]:
    """`examples:` checked: a list of at most `MAX_EXAMPLES` short, non-empty strings."""
    if not isinstance(value, list) or len(value) > MAX_EXAMPLES:
        raise AgentTreeError(
            f"{where}: 'examples' must be a list of at most {MAX_EXAMPLES} strings"
        )
    found: list[str] = []
    for example in value:
        if not isinstance(example, str) or not example.strip():
            raise AgentTreeError(f"{where}: every example must be a non-empty string")
        text = " ".join(example.split())
        if len(text) > MAX_EXAMPLE_CHARS:
            raise AgentTreeError(
                f"{where}: example {text[:40]!r}... is over {MAX_EXAMPLE_CHARS} characters"
            )
        found.append(text)
    return tuple(found)


def build_support_tree(
    *,
    model: Model | str | None = None,
    path: str | Path | None = None,
    output_budget: OutputBudget | None = None,
    knowledge: KnowledgeSearch | None = None,
) -> BaseAgent:
    """The support tree from `path`, or the default tree shipped with the package; with
    `knowledge`, its agents that declare collections search them (`TreeSpec.build`)."""
    return TreeSpec.from_file(path or DEFAULT_TREE).build(
        model=model, output_budget=output_budget, knowledge=knowledge
    )
