"""Callbacks and plugins: each fires in order, and each can short-circuit its step."""

from __future__ import annotations

from typing import Any

from agents import AgentTool, BasePlugin, CallbackContext, LlmAgent, ToolContext
from agents.context import InvocationContext
from agents.events import Event
from agents.models.base import LlmRequest, LlmResponse
from agents.models.scripted import ScriptedModel, call
from agents.tools.base_tool import BaseTool
from tests.agents.conversation import Conversation

CANNED_REFUSAL = "I can't share credentials. A person will reach out."


def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order.

    Args:
        order_id: The order id.
    """
    return {"order_id": order_id, "status": "shipped"}


class Recorder(BasePlugin):
    """Records every hook it sees, as (hook, detail), and changes nothing."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def before_run(self, ctx: InvocationContext) -> str | None:
        self.seen.append(("before_run", ctx.agent.name))
        return None

    async def on_user_message(self, ctx: InvocationContext, event: Event) -> Event | None:
        self.seen.append(("on_user_message", event.text))
        return None

    async def on_event(self, ctx: InvocationContext, event: Event) -> Event | None:
        self.seen.append(("on_event", event.author))
        return None

    async def after_run(self, ctx: InvocationContext) -> None:
        self.seen.append(("after_run", ctx.agent.name))

    async def before_agent(self, agent: Any, ctx: CallbackContext) -> str | None:
        self.seen.append(("before_agent", agent.name))
        return None

    async def after_agent(self, agent: Any, ctx: CallbackContext) -> str | None:
        self.seen.append(("after_agent", agent.name))
        return None

    async def before_model(self, ctx: CallbackContext, request: LlmRequest) -> LlmResponse | None:
        self.seen.append(("before_model", request.agent_name))
        return None

    async def after_model(self, ctx: CallbackContext, response: LlmResponse) -> LlmResponse | None:
        self.seen.append(("after_model", ctx.agent_name))
        return None

    async def before_tool(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        self.seen.append(("before_tool", tool.name))
        return None

    async def after_tool(
        self,
        tool: BaseTool,
        args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        self.seen.append(("after_tool", tool.name))
        return None


def agent_recorder(seen: list[tuple[str, str]], hook: str) -> Any:
    """An agent callback (sync, to show both kinds work) that records and changes nothing."""

    def record(*args: Any) -> None:
        seen.append((hook, "agent"))

    return record


async def test_callbacks_fire_in_order_plugins_first() -> None:
    recorder = Recorder()
    seen = recorder.seen
    root = LlmAgent(
        name="root",
        tools=[lookup_order],
        **{
            f"{hook}_callback": agent_recorder(seen, hook)
            for hook in (
                "before_agent",
                "after_agent",
                "before_model",
                "after_model",
                "before_tool",
                "after_tool",
            )
        },
    )
    model = ScriptedModel([call("lookup_order", order_id="A-1"), "It shipped."])
    turn = await Conversation(root, model, plugins=[recorder]).send("where is A-1?")
    assert turn == [
        ("root", ("call", "lookup_order", {"order_id": "A-1"})),
        ("root", ("response", "lookup_order", {"order_id": "A-1", "status": "shipped"})),
        ("root", "It shipped."),
    ]
    assert seen == [
        ("on_user_message", "where is A-1?"),
        ("before_run", "root"),
        ("before_agent", "root"),
        ("before_agent", "agent"),
        ("before_model", "root"),
        ("before_model", "agent"),
        ("after_model", "root"),
        ("after_model", "agent"),
        ("on_event", "root"),  # the call, stored before the tool runs
        ("before_tool", "lookup_order"),
        ("before_tool", "agent"),
        ("after_tool", "lookup_order"),
        ("after_tool", "agent"),
        ("on_event", "root"),  # the response
        ("before_model", "root"),
        ("before_model", "agent"),
        ("after_model", "root"),
        ("after_model", "agent"),
        ("on_event", "root"),  # the answer
        ("after_agent", "root"),
        ("after_agent", "agent"),
        ("after_run", "root"),
    ]


async def test_before_model_callback_blocks_the_call_and_answers_instead() -> None:
    def guardrail(ctx: CallbackContext, request: LlmRequest) -> LlmResponse | None:
        if "password" in request.contents[-1].text.lower():
            return LlmResponse.from_text(CANNED_REFUSAL)
        return None

    model = ScriptedModel(["Your order shipped."])
    conversation = Conversation(LlmAgent(name="root", before_model_callback=guardrail), model)
    assert await conversation.send("What is the admin password?") == [("root", CANNED_REFUSAL)]
    assert model.requests == []  # blocked: the model never saw it, and no budget was spent
    assert await conversation.send("Where is my order?") == [("root", "Your order shipped.")]
    model.assert_complete()


async def test_before_tool_callback_returns_a_canned_result_instead_of_running_the_tool() -> None:
    ran: list[str] = []

    def never(order_id: str) -> dict[str, str]:
        """Refund an order.

        Args:
            order_id: The order id.
        """
        ran.append(order_id)
        return {"status": "refunded"}

    async def require_approval(
        tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        if tool.name == "never":
            return {"status": "needs approval", "order_id": args["order_id"]}
        return None

    root = LlmAgent(name="root", tools=[never], before_tool_callback=require_approval)
    model = ScriptedModel([call("never", order_id="A-1"), "A person must approve this refund."])
    assert await Conversation(root, model).send("refund A-1") == [
        ("root", ("call", "never", {"order_id": "A-1"})),
        ("root", ("response", "never", {"status": "needs approval", "order_id": "A-1"})),
        ("root", "A person must approve this refund."),
    ]
    assert ran == []


async def test_after_callbacks_replace_the_model_answer_and_the_tool_result() -> None:
    def redact(tool: BaseTool, args: Any, tc: ToolContext, result: dict[str, Any]) -> Any:
        return {**result, "status": "[redacted]"}

    def polite(ctx: CallbackContext, response: LlmResponse) -> LlmResponse | None:
        if response.function_calls:
            return None
        return LlmResponse.from_text(response.text + " Anything else?")

    root = LlmAgent(
        name="root", tools=[lookup_order], after_tool_callback=redact, after_model_callback=polite
    )
    model = ScriptedModel([call("lookup_order", order_id="A-1"), "Found it."])
    assert await Conversation(root, model).send("A-1?") == [
        ("root", ("call", "lookup_order", {"order_id": "A-1"})),
        ("root", ("response", "lookup_order", {"order_id": "A-1", "status": "[redacted]"})),
        ("root", "Found it. Anything else?"),
    ]


async def test_agent_callbacks_answer_in_place_of_the_agent_and_after_it() -> None:
    billing = LlmAgent(
        name="billing_agent",
        description="Refunds.",
        before_agent_callback=lambda ctx: "Billing is closed today; a person will follow up.",
    )
    root = LlmAgent(
        name="root",
        sub_agents=[billing],
        after_agent_callback=lambda ctx: None,
    )
    model = ScriptedModel([call("transfer_to_agent", agent_name="billing_agent")])
    turn = await Conversation(root, model).send("refund please")
    assert turn == [
        ("root", ("call", "transfer_to_agent", {"agent_name": "billing_agent"})),
        ("root", ("response", "transfer_to_agent", {"result": "transferred to billing_agent"})),
        ("billing_agent", "Billing is closed today; a person will follow up."),
    ]
    model.assert_complete()

    signed = LlmAgent(
        name="root", after_agent_callback=lambda ctx: f"(answered by {ctx.agent_name})"
    )
    assert await Conversation(signed, ScriptedModel(["Hi."])).send("hello") == [
        ("root", "Hi."),
        ("root", "(answered by root)"),
    ]


class Stamp(BasePlugin):
    """Stamps every event with who saw it, and the user event with the caller's channel."""

    def __init__(self, key: str) -> None:
        self.key = key

    async def on_user_message(self, ctx: InvocationContext, event: Event) -> Event | None:
        return event.with_metadata(channel=ctx.custom_metadata.get("channel"))

    async def on_event(self, ctx: InvocationContext, event: Event) -> Event | None:
        return event.with_metadata(**{self.key: True})


async def test_on_event_plugins_stamp_metadata_before_events_are_stored() -> None:
    model = ScriptedModel([call("lookup_order", order_id="A-1"), "It shipped."])
    root = LlmAgent(name="root", tools=[lookup_order])
    conversation = await Conversation(root, model, plugins=[Stamp("audit"), Stamp("qa")]).start()
    events = [
        e
        async for e in conversation.runner.run_async(
            user_id="u1",
            session_id=conversation.session_id or "",
            message="A-1?",
            custom_metadata={"channel": "web"},
        )
    ]
    assert [dict(e.custom_metadata) for e in events] == [{"audit": True, "qa": True}] * 3
    session = await conversation.service.get_session(
        app_name="support", user_id="u1", session_id=conversation.session_id or ""
    )
    assert session is not None
    assert [(e.author, dict(e.custom_metadata)) for e in session.events] == [
        ("user", {"channel": "web"}),
        *[("root", {"audit": True, "qa": True})] * 3,
    ]


async def test_before_run_plugin_answers_without_running_any_agent() -> None:
    class Maintenance(BasePlugin):
        async def before_run(self, ctx: InvocationContext) -> str | None:
            return "We are down for maintenance until 10:00."

    model = ScriptedModel()
    conversation = Conversation(LlmAgent(name="root"), model, plugins=[Maintenance()])
    assert await conversation.send("hello") == [
        ("root", "We are down for maintenance until 10:00.")
    ]
    assert model.requests == []


async def test_plugin_guardrail_also_covers_agents_consulted_as_tools() -> None:
    class BlockExpert(BasePlugin):
        async def before_model(
            self, ctx: CallbackContext, request: LlmRequest
        ) -> LlmResponse | None:
            if request.agent_name == "expert":
                return LlmResponse.from_text("The expert is unavailable.")
            return None

    expert = LlmAgent(name="expert", description="Knows everything.")
    root = LlmAgent(name="root", tools=[AgentTool(expert)])
    model = ScriptedModel([call("expert", request="what is X?"), "Sorry, no expert today."])
    turn = await Conversation(root, model, plugins=[BlockExpert()]).send("X?")
    assert turn == [
        ("root", ("call", "expert", {"request": "what is X?"})),
        ("root", ("response", "expert", {"result": "The expert is unavailable."})),
        ("root", "Sorry, no expert today."),
    ]
    assert [r.agent_name for r in model.requests] == ["root", "root"]
