"""Which agent owns a reply: the writer, or for a workflow's step, its workflow."""

from __future__ import annotations

from agents import LlmAgent, LoopAgent, SequentialAgent
from agents.runner import reply_owner


def test_reply_owner_names_the_outermost_workflow_under_an_llm_agent() -> None:
    fix = LlmAgent(name="fix_writer")
    check = LlmAgent(name="check")
    refine = LoopAgent(name="refine", sub_agents=[check], max_iterations=2)
    tech = SequentialAgent(name="tech_support", sub_agents=[LlmAgent(name="diagnose"), fix, refine])
    billing = LlmAgent(name="billing_agent")
    root = LlmAgent(name="support_supervisor", sub_agents=[billing, tech])
    owners = {a.name: reply_owner(a).name for a in root.walk()}
    assert owners == {
        "support_supervisor": "support_supervisor",
        "billing_agent": "billing_agent",
        "tech_support": "tech_support",
        "diagnose": "tech_support",
        "fix_writer": "tech_support",
        "refine": "tech_support",
        "check": "tech_support",
    }


def test_reply_owner_of_a_workflow_root_is_the_root() -> None:
    step = LlmAgent(name="step")
    pipe = SequentialAgent(name="pipe", sub_agents=[step])
    assert reply_owner(step) is pipe
