"""State scopes: app:, user:, temp: and session keys."""

from __future__ import annotations

from agents import InMemorySessionService, LlmAgent, ToolContext
from agents.models.scripted import ScriptedModel, call
from tests.agents.conversation import Conversation


def remember(tool_context: ToolContext) -> dict[str, str]:
    """Write one key of every scope."""
    tool_context.state["app:motd"] = "maintenance at 9"
    tool_context.state["user:tier"] = "pro"
    tool_context.state["temp:step"] = "1"
    tool_context.state["topic"] = "refund"
    return {"ok": "yes"}


def read_temp(tool_context: ToolContext) -> dict[str, str | None]:
    """Read the temporary key."""
    return {"temp": tool_context.state.get("temp:step")}


async def test_state_scopes_reach_the_right_sessions() -> None:
    service = InMemorySessionService()
    agent = LlmAgent(name="root", tools=[remember, read_temp])
    model = ScriptedModel([call("remember"), call("read_temp"), "done", call("read_temp"), "later"])
    first = Conversation(agent, model, service=service, user_id="alice")
    turn = await first.send("hi")
    # temp: is visible later in the same invocation...
    assert ("root", ("response", "read_temp", {"temp": "1"})) in turn
    # ...and gone by the next one.
    later = await first.send("again")
    assert ("root", ("response", "read_temp", {"temp": None})) in later

    same_user = await service.create_session(app_name="support", user_id="alice")
    other_user = await service.create_session(app_name="support", user_id="bob")
    assert same_user.state == {"app:motd": "maintenance at 9", "user:tier": "pro"}
    assert other_user.state == {"app:motd": "maintenance at 9"}
    assert (await first.state())["topic"] == "refund"
    assert "temp:step" not in await first.state()
