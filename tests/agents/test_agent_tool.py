"""AgentTool: a consulted agent sees state but no history, and hands back a result."""

from __future__ import annotations

from pydantic import BaseModel

from agents import AgentTool, LlmAgent, ToolContext
from agents.models.scripted import ScriptedModel, call, json_text
from tests.agents.conversation import Conversation


def write_state(tool_context: ToolContext) -> dict[str, str]:
    """Write one durable and one temporary key."""
    tool_context.state["policy.checked"] = "yes"
    tool_context.state["temp:scratch"] = "draft"
    return {"status": "written"}


async def test_agent_tool_child_sees_state_but_no_history() -> None:
    checker = LlmAgent(
        name="policy_checker",
        description="Policy.",
        instruction="Tier is {account_tier}.",
        tools=[write_state],
    )
    root = LlmAgent(name="root", tools=[AgentTool(checker)])
    model = ScriptedModel(
        [
            "Hello! How can I help?",
            call("policy_checker", request="May we refund $12.50?"),
            call("write_state"),
            "ALLOWED: refunds under $50.",
            "Yes, the refund is allowed.",
        ]
    )
    conversation = Conversation(root, model, state={"account_tier": "pro"})
    await conversation.send("hi")
    turn = await conversation.send("refund my $12.50 shipping fee?")
    assert turn == [
        ("root", ("call", "policy_checker", {"request": "May we refund $12.50?"})),
        ("root", ("response", "policy_checker", {"result": "ALLOWED: refunds under $50."})),
        ("root", "Yes, the refund is allowed."),
    ]
    child_request = model.requests[2]
    assert child_request.agent_name == "policy_checker"
    assert child_request.system_instruction.startswith("Tier is pro.")
    assert [c.text for c in child_request.contents] == ["May we refund $12.50?"]
    state = await conversation.state()
    assert state["policy.checked"] == "yes"
    assert "temp:scratch" not in state
    # The child's own events stay out of the caller's log.
    session = await conversation.service.get_session(
        app_name="support", user_id="u1", session_id=conversation.session_id or ""
    )
    assert session is not None
    assert {e.author for e in session.events} == {"user", "root"}


class Verdict(BaseModel):
    allowed: bool
    rule: str


async def test_agent_tool_output_schema_returns_validated_object() -> None:
    checker = LlmAgent(name="policy_checker", output_schema=Verdict)
    root = LlmAgent(name="root", tools=[AgentTool(checker)])
    model = ScriptedModel(
        [
            call("policy_checker", request="refund?"),
            json_text({"allowed": True, "rule": "R1"}),
            "Allowed under R1.",
        ]
    )
    turn = await Conversation(root, model).send("refund?")
    assert turn[1] == ("root", ("response", "policy_checker", {"allowed": True, "rule": "R1"}))
    assert model.requests[1].response_schema == Verdict.model_json_schema()


async def test_agent_tool_invalid_json_is_a_tool_error_the_caller_sees() -> None:
    checker = LlmAgent(name="policy_checker", output_schema=Verdict)
    root = LlmAgent(name="root", tools=[AgentTool(checker)])
    model = ScriptedModel([call("policy_checker", request="refund?"), "ALLOWED", "Sorry, unsure."])
    turn = await Conversation(root, model).send("refund?")
    response = turn[1][1]
    assert response[0] == "response"
    assert "does not match its schema" in response[2]["error"]
    assert "does not match its schema" in str(model.requests[2].contents[-1].parts[0])
    assert turn[-1] == ("root", "Sorry, unsure.")


async def test_agent_tool_skip_summarization_ends_turn_with_child_text() -> None:
    checker = LlmAgent(name="policy_checker")
    root = LlmAgent(name="root", tools=[AgentTool(checker, skip_summarization=True)])
    model = ScriptedModel([call("policy_checker", request="refund?"), "DENIED: over limit."])
    turn = await Conversation(root, model).send("refund?")
    assert turn[-1] == ("root", "DENIED: over limit.")
    assert len(model.requests) == 2
    model.assert_complete()


async def test_agent_tool_child_request_is_clipped_like_the_callers_messages() -> None:
    checker = LlmAgent(name="policy_checker", description="Policy.")
    root = LlmAgent(name="root", tools=[AgentTool(checker)])
    long_request = "May we refund this? " + "x" * 5000
    model = ScriptedModel(
        [call("policy_checker", request=long_request), "ALLOWED.", "Yes, allowed."]
    )
    conversation = Conversation(root, model, max_message_chars=1000)
    await conversation.send("refund?")
    [child_message] = model.requests[1].contents
    assert len(child_message.text) < 1200
    assert child_message.text.startswith("May we refund this?")
    assert "message clipped for the model" in child_message.text


class RefundQuestion(BaseModel):
    order_id: str
    amount: float


async def test_agent_tool_input_schema_is_offered_validated_and_sent_as_json() -> None:
    checker = LlmAgent(name="policy_checker", description="Policy.")
    root = LlmAgent(name="root", tools=[AgentTool(checker, input_schema=RefundQuestion)])
    model = ScriptedModel(
        [
            call("policy_checker", order_id="A-1001"),  # no amount: a tool error
            call("policy_checker", order_id="A-1001", amount=12.5),
            "ALLOWED: refunds under $50.",
            "Yes, the refund is allowed.",
        ]
    )
    turn = await Conversation(root, model).send("refund $12.50 on A-1001?")
    [offered] = [t for t in model.requests[0].tools if t.name == "policy_checker"]
    assert offered.parameters == RefundQuestion.model_json_schema()
    error = turn[1][1]
    assert error[0] == "response" and "do not match its input schema" in error[2]["error"]
    assert turn[3] == (
        "root",
        ("response", "policy_checker", {"result": "ALLOWED: refunds under $50."}),
    )
    [child_message] = model.requests[2].contents
    assert child_message.text == '{"order_id": "A-1001", "amount": 12.5}'
    assert turn[-1] == ("root", "Yes, the refund is allowed.")
