"""Workflow agents: parallel branches, loops, escalation."""

from __future__ import annotations

from agents import EXIT_LOOP, LlmAgent, LoopAgent, LoopExit, ParallelAgent, SequentialAgent
from agents.models.base import LlmRequest
from agents.models.scripted import ScriptedModel, call
from tests.agents.conversation import Conversation, simplify


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
    events = await Conversation(loop, model).send_events("write")
    assert [e.author for e in events] == ["writer", "reviewer", "writer", "reviewer", "refine"]
    # The loop's last event says why it stopped; it has no text, so no model sees it.
    assert events[-1].actions.loop_exit == LoopExit(reason="max_iterations", iterations=2)
    assert events[-1].parts == ()
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
    conversation = Conversation(outer, model)
    events = await conversation.send_events("review")
    assert [simplify(e) for e in events] == [
        ("reviewer", ("call", "exit_loop", {})),
        ("reviewer", ("response", "exit_loop", {"status": "done"})),
        ("reviewer", "Looks good."),
        ("refine", ""),
        ("publisher", "Published."),
    ]
    assert events[3].actions.loop_exit == LoopExit(reason="escalated", iterations=1)
    model.assert_complete()
    # The exit event stays out of the next request: the publisher saw only real turns.
    assert all("refine" not in c.text for c in model.requests[-1].contents)


async def test_loop_escalation_in_a_later_round_counts_the_rounds() -> None:
    loop = LoopAgent(
        name="refine", max_iterations=5, sub_agents=[LlmAgent(name="reviewer", tools=[EXIT_LOOP])]
    )
    model = ScriptedModel(["not yet", call("exit_loop"), "Done."])
    events = await Conversation(loop, model).send_events("review")
    assert events[-1].author == "refine"
    assert events[-1].actions.loop_exit == LoopExit(reason="escalated", iterations=2)


async def test_a_step_without_history_starts_at_the_step_before_it_not_the_users_message() -> None:
    diagnose = LlmAgent(name="diagnose", output_key="diagnosis")
    fix_writer = LlmAgent(
        name="fix_writer", instruction="Fix for: {diagnosis}", include_contents="none"
    )
    pipeline = SequentialAgent(name="fix", sub_agents=[diagnose, fix_writer])
    model = ScriptedModel(["A stale cache.", "Clear the cache."])
    conversation = Conversation(pipeline, model)
    await conversation.send("the app shows old prices")
    model.add("The token expired.", "Log in again.")
    turn = await conversation.send("now it logs me out")
    assert turn == [("diagnose", "The token expired."), ("fix_writer", "Log in again.")]
    fix_request = model.requests[-1]
    assert fix_request.system_instruction.startswith("Fix for: The token expired.")
    # Only the current turn, from the step before it: no earlier turn, no user message.
    assert len(fix_request.contents) == 1
    assert "The token expired." in fix_request.contents[0].text
    assert "now it logs me out" not in fix_request.contents[0].text


async def test_an_agent_without_history_transferred_to_starts_at_the_users_message() -> None:
    from agents.models.scripted import transfer

    billing = LlmAgent(name="billing_agent", include_contents="none")
    root = LlmAgent(name="root", sub_agents=[billing])
    model = ScriptedModel(["Hello!", transfer("billing_agent"), "Which charge?"])
    conversation = Conversation(root, model)
    await conversation.send("hi")
    await conversation.send("I was charged twice")
    texts = [c.text for c in model.requests[-1].contents]
    assert texts[0] == "I was charged twice" and "hi" not in texts


def test_two_parallel_branches_writing_one_output_key_are_refused_at_build() -> None:
    import pytest

    from agents.errors import AgentTreeError

    with pytest.raises(
        AgentTreeError, match="'research_a' and 'checker' both write output_key 'a'"
    ):
        ParallelAgent(
            name="fanout",
            sub_agents=[
                LlmAgent(name="research_a", output_key="a"),
                SequentialAgent(
                    name="check", sub_agents=[LlmAgent(name="checker", output_key="a")]
                ),
            ],
        )
    # One branch writing a key twice, in sequence, is no race.
    steps = SequentialAgent(
        name="steps",
        sub_agents=[LlmAgent(name="draft", output_key="a"), LlmAgent(name="edit", output_key="a")],
    )
    assert ParallelAgent(name="ok", sub_agents=[steps, LlmAgent(name="other", output_key="b")])
