"""The agent tree: parents, unique names, and the YAML definition."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents import AgentTool, AgentTreeError, LlmAgent, SequentialAgent
from agents.tree import TreeSpec, build_support_tree


def test_tree_sets_parents_and_finds_agents() -> None:
    leaf = LlmAgent(name="leaf")
    mid = SequentialAgent(name="mid", sub_agents=[leaf])
    root = LlmAgent(name="root", sub_agents=[mid])
    assert leaf.parent is mid and mid.parent is root
    assert leaf.root_agent is root
    assert root.find_agent("leaf") is leaf
    assert root.find_agent("nobody") is None


def test_tree_rejects_second_parent() -> None:
    shared = LlmAgent(name="shared")
    LlmAgent(name="a", sub_agents=[shared])
    with pytest.raises(AgentTreeError, match="already has parent"):
        LlmAgent(name="b", sub_agents=[shared])


def test_tree_rejects_duplicate_names() -> None:
    with pytest.raises(AgentTreeError, match="duplicate agent name 'x'"):
        LlmAgent(
            name="root",
            sub_agents=[
                LlmAgent(name="x"),
                SequentialAgent(name="s", sub_agents=[LlmAgent(name="x")]),
            ],
        )


def test_tree_default_support_tree_matches_the_seed() -> None:
    root = build_support_tree(model="openai/any")
    assert root.name == "support_supervisor"
    assert [a.name for a in root.sub_agents] == ["billing_agent", "tech_support"]
    billing = root.find_agent("billing_agent")
    assert isinstance(billing, LlmAgent)
    assert billing.disallow_transfer_to_peers and billing.output_key == "billing_summary"
    tech = root.find_agent("tech_support")
    assert isinstance(tech, SequentialAgent)
    assert [a.name for a in tech.sub_agents] == ["diagnose", "fix_writer"]
    assert isinstance(root, LlmAgent)
    (tool,) = root.tools
    assert isinstance(tool, AgentTool) and tool.agent.name == "policy_checker"


def test_tree_builds_fresh_instances_every_time() -> None:
    first, second = build_support_tree(), build_support_tree()
    assert first is not second
    assert first.find_agent("billing_agent") is not second.find_agent("billing_agent")


def test_tree_yaml_with_import_path_tool(tmp_path: Path) -> None:
    path = tmp_path / "tree.yaml"
    path.write_text(
        "root: front\n"
        "agents:\n"
        "  front:\n"
        "    instruction: hi\n"
        "    tools: ['agents.tools.exit_loop:exit_loop']\n"
        "    sub_agents: [refine]\n"
        "  refine: {type: loop, max_iterations: 2, sub_agents: [writer]}\n"
        "  writer: {description: writes}\n"
    )
    root = TreeSpec.from_file(path).build(model="m")
    assert isinstance(root, LlmAgent) and root.tools[0].name == "exit_loop"
    assert root.find_agent("writer") is not None


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("root: a\nagents: {a: {sub_agents: [b]}}\n", "unknown agent 'b'"),
        ("root: a\nagents: {a: {sub_agents: [a]}}\n", "contains itself"),
        ("root: a\nagents: {a: {type: blob}}\n", "unknown type"),
        ("root: a\nagents: {a: {instructions: typo}}\n", "unknown keys"),
        ("root: a\nagents: {a: {tools: ['nope.mod:fn']}}\n", "cannot import tool"),
        ("root: z\nagents: {a: {}}\n", "root 'z' is not defined"),
        ("root: a\nagents: {a: {examples: one request}}\n", "'examples' must be a list"),
        ("root: a\nagents: {a: {examples: [ok, '  ']}}\n", "non-empty string"),
        ("root: a\nagents: {a: {examples: [ok, 3]}}\n", "non-empty string"),
        ("root: a\nagents: {a: {examples: ['" + "x " * 101 + "']}}\n", "over 200 characters"),
        ("root: a\nagents: {a: {examples: [" + "r, " * 11 + "]}}\n", "at most 10 strings"),
    ],
)
def test_tree_yaml_errors_are_clear(tmp_path: Path, yaml_text: str, message: str) -> None:
    path = tmp_path / "tree.yaml"
    path.write_text(yaml_text)
    with pytest.raises(AgentTreeError, match=message):
        TreeSpec.from_file(path).build(model="m")


def test_tree_yaml_examples_land_on_every_kind_of_agent(tmp_path: Path) -> None:
    path = tmp_path / "tree.yaml"
    path.write_text(
        "root: front\n"
        "agents:\n"
        "  front: {examples: ['hello   there'], sub_agents: [pipeline]}\n"
        "  pipeline: {type: sequential, examples: [fix it, it broke], sub_agents: [step]}\n"
        "  step: {description: does it}\n"
    )
    root = TreeSpec.from_file(path).build(model="m")
    assert root.examples == ("hello there",)  # whitespace collapsed
    pipeline = root.find_agent("pipeline")
    assert isinstance(pipeline, SequentialAgent) and pipeline.examples == ("fix it", "it broke")
    step = root.find_agent("step")
    assert step is not None and step.examples == ()
