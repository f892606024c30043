"""The Slack ts plugin: the user's message ts on the user event, the reply's on answers."""

from __future__ import annotations

from agents import LlmAgent
from agents.models.base import ModelError
from agents.models.profile import ModelProfile
from agents.models.scripted import ScriptedModel, transfer
from bot.slack.message_ts import SlackTsPlugin, message_ts, turn_metadata
from tests.agents.conversation import Conversation


def tree() -> LlmAgent:
    billing = LlmAgent(name="billing_agent", description="Refunds and invoices.")
    return LlmAgent(name="root", description="Front door.", sub_agents=[billing])


async def _turn(conversation: Conversation, reply_ts: str | None) -> list[tuple[str, str | None]]:
    events = [
        e
        async for e in conversation.runner.run_async(
            user_id="u1",
            session_id=conversation.session_id or "",
            message="refund",
            custom_metadata=turn_metadata("100.1", reply_ts),
        )
    ]
    return [(e.author, message_ts(e)) for e in events]


async def test_transfer_reply_events_record_the_reply_ts() -> None:
    model = ScriptedModel([transfer("billing_agent"), "Refund issued."])
    conversation = await Conversation(tree(), model, plugins=[SlackTsPlugin()]).start()
    assert await _turn(conversation, "100.2") == [
        ("root", None),
        ("root", None),
        ("billing_agent", "100.2"),
    ]
    session = await conversation.service.get_session(
        app_name="support", user_id="u1", session_id=conversation.session_id or ""
    )
    assert session is not None
    assert [(e.author, message_ts(e)) for e in session.events] == [
        ("user", "100.1"),
        ("root", None),
        ("root", None),
        ("billing_agent", "100.2"),
    ]


async def test_failure_notice_records_the_reply_ts_and_no_placeholder_records_none() -> None:
    class Down:
        name = "down"
        profile = ModelProfile()

        async def generate(self, request: object) -> object:
            raise ModelError("unreachable", code="model_unavailable")

    conversation = await Conversation(tree(), Down(), plugins=[SlackTsPlugin()]).start()  # type: ignore[arg-type]
    assert await _turn(conversation, "100.2") == [("root", "100.2")]
    model = ScriptedModel(["Hello."])
    conversation = await Conversation(tree(), model, plugins=[SlackTsPlugin()]).start()
    assert await _turn(conversation, None) == [("root", None)]


async def test_without_the_plugin_the_runtime_stamps_nothing() -> None:
    conversation = await Conversation(tree(), ScriptedModel(["Hello."])).start()
    assert await _turn(conversation, "100.2") == [("root", None)]
    session = await conversation.service.get_session(
        app_name="support", user_id="u1", session_id=conversation.session_id or ""
    )
    assert session is not None and dict(session.events[0].custom_metadata) == {}
