"""Workflow agents: parallel branches, loops, escalation."""

from __future__ import annotations

from agents import EXIT_LOOP, LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from agents.models.base import LlmRequest
from agents.models.scripted import ScriptedModel, call
from tests.agents.conversation import Conversation


def by_agent(replies: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    """A scripted step that answers by agent name, so parallel order doesn't matter."""

    def step(request: LlmRequest) -> str:
        return replies[request.agent_name].pop(0)

    return step


async def test_parallel_branches_are_isolated_and_the_next_step_sees_both() -> None:
    replies = {"research_a": ["A found X"], "research_b": ["B found Y"], "merge": ["X and Y"]}
    fanout = ParallelAgent(
        name="fanout",
        sub_agents=[
            LlmAgent(name="research_a", output_key="a"),
            LlmAgent(name="research_b", output_key="b"),
        ],
    )
    pipeline = SequentialAgent(
        name="pipeline", sub_agents=[fanout, LlmAgent(name="merge", instruction="{a} + {b}")]
    )
    model = ScriptedModel([by_agent(replies)] * 3)
    turn = await Conversation(pipeline, model).send("go")
    assert sorted(turn[:2]) == [("research_a", "A found X"), ("research_b", "B found Y")]
    assert turn[2] == ("merge", "X and Y")
    requests = {r.agent_name: r for r in model.requests}
    assert [c.text for c in requests["research_a"].contents] == ["go"]
    assert [c.text for c in requests["research_b"].contents] == ["go"]
    merge_texts = " ".join(c.text for c in requests["merge"].contents)
    assert "A found X" in merge_texts and "B found Y" in merge_texts
    assert requests["merge"].system_instruction.startswith("A found X + B found Y")


async def test_loop_without_escalation_runs_each_child_max_iterations_times() -> None:
    loop = LoopAgent(
        name="refine",
        max_iterations=2,
        sub_agents=[LlmAgent(name="writer"), LlmAgent(name="reviewer")],
    )
    model = ScriptedModel(["draft 1", "not yet", "draft 2", "still not"])
    turn = await Conversation(loop, model).send("write")
    assert [a for a, _ in turn] == ["writer", "reviewer", "writer", "reviewer"]
    model.assert_complete()


async def test_loop_escalation_stops_after_current_child_and_sequence_goes_on() -> None:
    loop = LoopAgent(
        name="refine",
        max_iterations=5,
        sub_agents=[
            LlmAgent(name="reviewer", tools=[EXIT_LOOP]),
            LlmAgent(name="writer"),
        ],
    )
    outer = SequentialAgent(name="outer", sub_agents=[loop, LlmAgent(name="publisher")])
    model = ScriptedModel([call("exit_loop"), "Looks good.", "Published."])
    turn = await Conversation(outer, model).send("review")
    assert turn == [
        ("reviewer", ("call", "exit_loop", {})),
        ("reviewer", ("response", "exit_loop", {"status": "done"})),
        ("reviewer", "Looks good."),
        ("publisher", "Published."),
    ]
    model.assert_complete()
