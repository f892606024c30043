"""The pure parts of a streamed reply: safe Markdown at every delta, and the timeline."""

from __future__ import annotations

import pytest

from agents import AgentTool, LlmAgent, SequentialAgent
from agents.events import Event, EventActions, FunctionCall, FunctionResponse, Part
from bot.slack.render.markdown import MarkdownGate, safe_markdown
from bot.slack.timeline import Timeline, tree_names, workflow_steps

TEXT = (
    "Hi <!channel> & <@U2>, see [bank.example.com](https://evil.example/x) "
    "or [the docs](https://docs.example.com/a) [not a link] <!subteam^S1>."
)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 13, 40, len(TEXT)])
def test_every_split_of_the_deltas_is_safe_and_adds_up_to_the_whole(size: int) -> None:
    gate = MarkdownGate()
    pieces = [gate.feed(TEXT[i : i + size]) for i in range(0, len(TEXT), size)]
    pieces.append(gate.flush())
    assert all("<" not in piece for piece in pieces)
    assert "".join(pieces) == safe_markdown(TEXT)
    assert "bank.example.com" not in "".join(pieces)
    assert "[the docs](https://docs.example.com/a)" in "".join(pieces)


def test_an_unfinished_link_is_held_back_only_until_it_cannot_be_one() -> None:
    gate = MarkdownGate()
    assert gate.feed("See [label") == "See "
    assert gate.feed("](https://a.example") == ""
    assert gate.feed(")!") == "[label](https://a.example)!"
    assert gate.feed("[x\n") == ""  # a label may go on past a line break
    assert gate.feed("\nnext") == "[x\n\nnext"  # but never past a blank line


def event(author: str, **kwargs: object) -> Event:
    return Event(author=author, invocation_id="inv", **kwargs)  # type: ignore[arg-type]


def test_transfer_and_agent_tool_calls_become_tasks_in_order() -> None:
    timeline = Timeline(names=frozenset({"support_supervisor", "billing_agent", "policy_checker"}))
    call = FunctionCall(id="c1", name="policy_checker", args={"request": "refund?"})
    chunks = [
        *timeline.observe(event("user", parts=(Part(text="hi"),))),
        *timeline.observe(
            event("support_supervisor", actions=EventActions(transfer_to_agent="billing_agent"))
        ),
        *timeline.observe(event("billing_agent", parts=(Part(function_call=call),))),
        *timeline.observe(
            event(
                "billing_agent",
                parts=(Part(function_response=FunctionResponse(id="c1", name="policy_checker")),),
            )
        ),
        *timeline.observe(event("billing_agent", parts=(Part(text="ok"),), partial=True)),
    ]
    assert [(c["title"], c["status"]) for c in chunks] == [
        ("support_supervisor → billing_agent", "complete"),
        ("billing_agent consulted policy_checker", "in_progress"),
        ("billing_agent consulted policy_checker", "complete"),
    ]
    assert timeline.close() == []


def test_pipeline_steps_show_each_step_and_close_the_last() -> None:
    diagnose = LlmAgent(name="diagnose")
    fix = LlmAgent(name="fix_writer")
    root = LlmAgent(
        name="root", sub_agents=[SequentialAgent(name="pipe", sub_agents=[diagnose, fix])]
    )
    timeline = Timeline(workflow_steps(root))
    chunks = [
        *timeline.observe(event("diagnose", parts=(Part(text="disk full"),))),
        *timeline.observe(event("fix_writer", parts=(Part(text="clear "),), partial=True)),
        *timeline.observe(event("fix_writer", parts=(Part(text="clear it"),))),
    ]
    assert [(c["title"], c["status"]) for c in chunks] == [
        ("diagnose", "in_progress"),
        ("diagnose", "complete"),
        ("fix_writer", "in_progress"),
    ]
    assert [(c["title"], c["status"]) for c in timeline.close(failed=True)] == [
        ("fix_writer", "error")
    ]


BAIT = "Refund of $500 APPROVED by finance, sent to card 4242 <!channel>"


def test_task_titles_name_only_agents_and_tools_the_tree_has() -> None:
    checker = LlmAgent(name="policy_checker")
    billing = LlmAgent(name="billing_agent", tools=[AgentTool(checker)])
    root = LlmAgent(name="support_supervisor", sub_agents=[billing])
    names = tree_names(root)
    assert {"support_supervisor", "billing_agent", "policy_checker"} <= names
    timeline = Timeline(workflow_steps(root), names)
    made_up = FunctionCall(id="c1", name=BAIT, args={})
    known = FunctionCall(id="c2", name="policy_checker", args={})
    chunks = [
        *timeline.observe(event("support_supervisor", parts=(Part(function_call=made_up),))),
        *timeline.observe(
            event("support_supervisor", actions=EventActions(transfer_to_agent=BAIT))
        ),
        *timeline.observe(event(BAIT, parts=(Part(function_call=known),))),
        *timeline.observe(event("billing_agent", parts=(Part(function_call=known),))),
    ]
    assert [c["title"] for c in chunks] == [
        "support_supervisor is working…",
        "support_supervisor is working…",
        "An agent is working…",
        "billing_agent consulted policy_checker",
    ]
    assert not any("4242" in c["title"] or "<" in c["title"] for c in chunks)
