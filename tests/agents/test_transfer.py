"""Transfer semantics: targets, who answers next, the prompt, and the model-call cap."""

from __future__ import annotations

from agents import LlmAgent, SequentialAgent
from agents.models.scripted import ScriptedModel, transfer
from tests.agents.conversation import Conversation


def tree(**billing_kwargs: object) -> LlmAgent:
    billing = LlmAgent(name="billing_agent", description="Refunds and invoices.", **billing_kwargs)  # type: ignore[arg-type]
    tech = LlmAgent(name="tech_agent", description="Product errors.")
    return LlmAgent(name="root", description="Front door.", sub_agents=[billing, tech])


async def test_transfer_offers_exactly_the_allowed_names() -> None:
    model = ScriptedModel([transfer("billing_agent"), "billing reply"])
    await Conversation(tree(), model).send("charged twice")
    root_tools = {t.name: t for t in model.requests[0].tools}
    assert root_tools["transfer_to_agent"].parameters["properties"]["agent_name"]["enum"] == [
        "billing_agent",
        "tech_agent",
    ]
    billing_tools = {t.name: t for t in model.requests[1].tools}
    # A sub-agent may go back to its parent and to its peers.
    assert billing_tools["transfer_to_agent"].parameters["properties"]["agent_name"]["enum"] == [
        "root",
        "tech_agent",
    ]


async def test_transfer_to_made_up_name_reaches_no_agent() -> None:
    model = ScriptedModel([transfer("refund_wizard"), "I can help with that myself."])
    turn = await Conversation(tree(), model).send("refund please")
    assert turn == [
        ("root", ("call", "transfer_to_agent", {"agent_name": "refund_wizard"})),
        (
            "root",
            (
                "response",
                "transfer_to_agent",
                {
                    "error": "cannot transfer to 'refund_wizard'; allowed agents: "
                    "['billing_agent', 'tech_agent']"
                },
            ),
        ),
        ("root", "I can help with that myself."),
    ]
    model.assert_complete()


async def test_transfer_target_answers_in_same_invocation() -> None:
    model = ScriptedModel([transfer("billing_agent"), "Refund of $12.50 issued."])
    turn = await Conversation(tree(), model).send("I was charged twice")
    assert turn == [
        ("root", ("call", "transfer_to_agent", {"agent_name": "billing_agent"})),
        ("root", ("response", "transfer_to_agent", {"result": "transferred to billing_agent"})),
        ("billing_agent", "Refund of $12.50 issued."),
    ]
    # The target sees the supervisor's turn as context, not as its own messages.
    billing_request = model.requests[1]
    assert billing_request.agent_name == "billing_agent"
    roles = [c.role for c in billing_request.contents]
    assert "model" not in roles
    assert "[root] called tool `transfer_to_agent`" in billing_request.contents[1].text


async def test_transfer_auto_sub_agent_takes_next_message() -> None:
    model = ScriptedModel([transfer("billing_agent"), "Which invoice?", "Invoice 7 refunded."])
    conversation = Conversation(tree(), model)
    await conversation.send("refund please")
    assert await conversation.send("invoice 7") == [("billing_agent", "Invoice 7 refunded.")]
    assert model.requests[2].agent_name == "billing_agent"
    model.assert_complete()


async def test_transfer_disallow_parent_sub_agent_is_never_resumed() -> None:
    model = ScriptedModel([transfer("billing_agent"), "Which invoice?", "root again"])
    conversation = Conversation(tree(disallow_transfer_to_parent=True), model)
    await conversation.send("refund please")
    assert await conversation.send("invoice 7") == [("root", "root again")]


async def test_transfer_disallow_parent_hands_back_to_the_transferring_agent() -> None:
    inner = LlmAgent(name="refund_agent", description="Refunds.", disallow_transfer_to_parent=True)
    billing = LlmAgent(name="billing_agent", description="Billing.", sub_agents=[inner])
    root = LlmAgent(name="root", sub_agents=[billing])
    model = ScriptedModel(
        [transfer("billing_agent"), transfer("refund_agent"), "refunded", "billing again"]
    )
    conversation = Conversation(root, model)
    await conversation.send("refund")
    assert await conversation.send("and the invoice?") == [("billing_agent", "billing again")]


async def test_transfer_workflow_step_never_keeps_the_conversation() -> None:
    pipeline = SequentialAgent(
        name="tech_support",
        description="Errors.",
        sub_agents=[
            LlmAgent(name="diagnose", output_key="diagnosis"),
            LlmAgent(name="fix_writer", instruction="Fix: {diagnosis}"),
        ],
    )
    root = LlmAgent(name="root", sub_agents=[pipeline])
    model = ScriptedModel(
        [transfer("tech_support"), "Cache is stale.", "1. Clear the cache.", "root answers"]
    )
    conversation = Conversation(root, model)
    turn = await conversation.send("app crashes")
    assert turn[-2:] == [("diagnose", "Cache is stale."), ("fix_writer", "1. Clear the cache.")]
    assert model.requests[2].system_instruction.startswith("Fix: Cache is stale.")
    assert await conversation.send("thanks") == [("root", "root answers")]


async def test_transfer_workflow_child_is_offered_neither_parent_nor_peers() -> None:
    pipeline = SequentialAgent(
        name="pipe", sub_agents=[LlmAgent(name="step_a"), LlmAgent(name="step_b")]
    )
    root = LlmAgent(name="root", sub_agents=[pipeline])
    model = ScriptedModel([transfer("pipe"), "a", "b"])
    await Conversation(root, model).send("go")
    for request in model.requests[1:]:
        assert "transfer_to_agent" not in request.tool_names()
        assert "transfer" not in request.system_instruction


async def test_transfer_disallow_peers_makes_peers_unreachable() -> None:
    model = ScriptedModel([transfer("billing_agent"), transfer("tech_agent"), "root"])
    conversation = Conversation(tree(disallow_transfer_to_peers=True), model)
    turn = await conversation.send("crash after refund")
    enum = model.requests[1].find_tool("transfer_to_agent")
    assert enum is not None
    assert enum.parameters["properties"]["agent_name"]["enum"] == ["root"]
    assert turn[3][1][0] == "response"
    assert "cannot transfer to 'tech_agent'" in turn[3][1][2]["error"]


async def test_transfer_prompt_mentions_parent_only_when_allowed() -> None:
    model = ScriptedModel([transfer("billing_agent"), "ok"])
    await Conversation(tree(), model).send("refund")
    assert "Your parent agent is root" in model.requests[1].system_instruction

    model = ScriptedModel([transfer("billing_agent"), "ok"])
    await Conversation(tree(disallow_transfer_to_parent=True), model).send("refund")
    assert "parent" not in model.requests[1].system_instruction
    assert (
        "root"
        not in model.requests[1]
        .find_tool("transfer_to_agent")
        .parameters[  # type: ignore[union-attr]
            "properties"
        ]["agent_name"]["enum"]
    )


async def test_transfer_ping_pong_stops_at_model_call_cap() -> None:
    steps = [transfer("billing_agent" if i % 2 == 0 else "root") for i in range(10)]
    model = ScriptedModel(steps)
    conversation = Conversation(tree(), model, max_model_calls=6)
    events = await conversation.send_events("loop forever")
    assert len(model.requests) == 6
    final = events[-1]
    assert final.error_code == "model_call_limit"
    assert "too many steps" in final.text
    # The next message still works: nothing crashed, the session is intact.
    model.add("back to normal")
    assert (await conversation.send("hello"))[-1][1] == "back to normal"


def test_a_pending_function_call_goes_back_to_the_agent_that_made_it() -> None:
    from agents.events import Event, FunctionCall, FunctionResponse, Part
    from agents.runner import find_agent_to_run
    from agents.sessions.session import Session

    # billing_agent never keeps the conversation by the transfer rule (no transfer to its
    # parent), and diagnose is a workflow step: only a pending call brings either back.
    billing = LlmAgent(name="billing_agent", disallow_transfer_to_parent=True)
    diagnose = LlmAgent(name="diagnose")
    root = LlmAgent(
        name="root", sub_agents=[billing, SequentialAgent(name="fix", sub_agents=[diagnose])]
    )
    for caller in ("billing_agent", "diagnose"):
        approval = FunctionCall(id=f"c-{caller}", name="ask_approval", args={})
        events = [
            Event(id="e1", author="user", parts=(Part(text="refund A-1001"),)),
            Event(id="e2", author=caller, parts=(Part(function_call=approval),)),
            Event(id="e3", author="user", parts=(Part(text="approved"),)),
        ]
        session = Session(id="s", app_name="a", user_id="u", events=events)
        assert find_agent_to_run(session, root).name == caller
        answer = FunctionResponse(id=approval.id, name="ask_approval", response={"ok": True})
        answered = [
            *events[:2],
            Event(id="e3", author=caller, parts=(Part(function_response=answer),)),
        ]
        session = Session(id="s", app_name="a", user_id="u", events=answered)
        assert find_agent_to_run(session, root).name == "root"  # answered: the usual rule
