"""End to end: bounded model input (issue 17 item 5) — long messages are clipped for
the model only, compaction survives an oversized turn, and an interrupted tool call is
closed so compaction resumes."""

from __future__ import annotations

from agents.compaction import COMPACTION_AUTHOR
from agents.events import Event, FunctionCall, Part, interrupted_responses
from agents.models.base import LlmRequest
from agents.models.scripted import ScriptedModel
from storage.threads import ThreadKey
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, dm
from tests.e2e.replies import answers, shown
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

LONG = "log line 42: disk full\n" * 1_700  # 39,100 characters, within Slack's 40,000


def _longest_user_text(request: LlmRequest) -> int:
    return max(len(c.text) for c in request.contents if c.role == "user")


async def test_bounded_input_long_messages_are_clipped_for_the_model_not_in_storage(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel(["Looks like a full disk.", "Still a full disk.", "Glad to help."])
    compaction = ScriptedModel(["The user pasted two long disk-full logs."])
    bot = await start_bot(
        support_tree(model),
        compaction_model=compaction,
        compaction_interval=3,
        max_model_message_chars=4_000,
    )
    root = "1700000500.000100"
    await bot.send_event(dm(LONG, ts=root))
    await bot.idle()
    await bot.send_event(dm(LONG, ts="1700000500.000200", thread_ts=root))
    await bot.idle()
    await bot.send_event(dm("thanks", ts="1700000500.000300", thread_ts=root))
    await bot.idle()
    # Every reply was posted: no turn failed on the size of the history.
    assert shown(answers(slack)[-1]).endswith("Glad to help.")
    last = model.requests[-1]
    assert _longest_user_text(last) < 4_200
    assert "message clipped for the model" in last.contents[0].text
    # Storage keeps both messages whole.
    db = bot.services.db
    record = await db.threads.get(ThreadKey(team_id=TEAM, channel_id="D1", thread_ts=root))
    assert record is not None
    session = await db.sessions.of_thread(record)
    assert session is not None
    users = [e.text for e in session.events if e.author == "user"]
    assert users[:2] == [LONG.strip(), LONG.strip()]
    # Compaction ran over the oversized turns, sending each clipped.
    assert any(e.author == COMPACTION_AUTHOR for e in session.events)
    [summary_request] = compaction.requests
    assert len(summary_request.contents[0].text) < 3 * 4_000 + 2_000


def test_bounded_input_interrupted_calls_get_an_interrupted_result() -> None:
    call = FunctionCall(id="call_1", name="lookup_order", args={"order": "4411"})
    events = [
        Event(author="user", invocation_id="inv1", parts=(Part(text="where is 4411"),)),
        Event(author="billing_agent", invocation_id="inv1", parts=(Part(function_call=call),)),
    ]
    [closing] = interrupted_responses(events)
    assert closing.author == "billing_agent"
    assert closing.invocation_id == "inv1"
    [response] = closing.function_responses
    assert (response.id, response.response["error"]) == ("call_1", "interrupted")
    assert interrupted_responses([*events, closing]) == []
