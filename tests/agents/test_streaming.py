"""Streamed replies in the runtime: partial text events, never stored, only for prose."""

from __future__ import annotations

from agents import LlmAgent, ParallelAgent
from agents.events import Event
from agents.models.base import ModelError
from agents.models.scripted import ScriptedModel, deltas, json_text, transfer
from agents.runner import MODEL_FAILURE_TEXT, Runner
from agents.sessions.service import InMemorySessionService


def tree(model: ScriptedModel) -> LlmAgent:
    billing = LlmAgent(name="billing_agent", description="Refunds and invoices.")
    return LlmAgent(name="root", description="Front door.", model=model, sub_agents=[billing])


async def run(
    agent: LlmAgent, *, streaming: bool, message: str = "charged twice"
) -> tuple[list[Event], list[Event]]:
    """(every event yielded, the session's stored events) of one invocation."""
    service = InMemorySessionService()
    session = await service.create_session(app_name="app", user_id="u1")
    runner = Runner(agent=agent, app_name="app", session_service=service)
    yielded = [
        e
        async for e in runner.run_async(
            user_id="u1", session_id=session.id, message=message, streaming=streaming
        )
    ]
    stored = await service.get_session(app_name="app", user_id="u1", session_id=session.id)
    assert stored is not None
    return yielded, list(stored.events)


def shape(events: list[Event]) -> list[tuple[str, str, str | None]]:
    return [(e.author, e.text, e.actions.transfer_to_agent) for e in events]


async def test_reply_text_streams_as_partial_events_after_the_transfer() -> None:
    script = [transfer("billing_agent"), deltas("Refund <!chan", "nel> on its ", "way.")]
    yielded, stored = await run(tree(ScriptedModel(script, chunk_delay=0.02)), streaming=True)
    partial = [(e.author, e.text) for e in yielded if e.partial]
    assert partial == [
        ("billing_agent", "Refund <!chan"),
        ("billing_agent", "nel> on its "),
        ("billing_agent", "way."),
    ]
    first_partial = next(i for i, e in enumerate(yielded) if e.partial)
    transfer_at = next(i for i, e in enumerate(yielded) if e.actions.transfer_to_agent)
    assert transfer_at < first_partial
    final = yielded[-1]
    assert (final.author, final.text, final.partial) == (
        "billing_agent",
        "Refund <!channel> on its way.",
        False,
    )
    assert final.id and stored[-1].id == final.id  # the complete event is stored
    assert not any(e.partial for e in stored)


async def test_deltas_that_queue_up_meanwhile_come_as_one_event() -> None:
    script = [transfer("billing_agent"), deltas("Refund ", "on its ", "way.")]
    yielded, _ = await run(tree(ScriptedModel(script)), streaming=True)
    assert [e.text for e in yielded if e.partial] == ["Refund on its way."]


async def test_streaming_stores_and_yields_exactly_what_a_plain_run_does() -> None:
    script = [transfer("billing_agent"), "Your refund of $12.50 is on its way."]
    plain, plain_stored = await run(tree(ScriptedModel(script)), streaming=False)
    streamed, streamed_stored = await run(tree(ScriptedModel(script)), streaming=True)
    assert not any(e.partial for e in plain)
    assert shape([e for e in streamed if not e.partial]) == shape(plain)
    assert shape(streamed_stored) == shape(plain_stored)
    assert "".join(e.text for e in streamed if e.partial) == plain[-1].text


async def test_decide_first_streams_only_the_answer_never_the_decision() -> None:
    model = ScriptedModel(
        [
            json_text({"choice": "billing_agent"}),
            json_text("billing_agent"),  # billing_agent keeps the request
            "We refund within 5 days.",
        ],
        decide_first=True,
    )
    yielded, _ = await run(tree(model), streaming=True)
    partial = "".join(e.text for e in yielded if e.partial)
    assert partial == "We refund within 5 days."
    assert all(e.author == "billing_agent" for e in yielded if e.partial)


async def test_a_failed_model_call_ends_with_the_failure_notice_after_partials() -> None:
    def broken(_request: object) -> str:
        raise ModelError("the server went away", code="model_unavailable")

    model = ScriptedModel([transfer("billing_agent"), broken])
    yielded, stored = await run(tree(model), streaming=True)
    assert yielded[-1].error_code == "model_unavailable"
    assert yielded[-1].text == MODEL_FAILURE_TEXT
    assert stored[-1].error_code == "model_unavailable"


async def test_parallel_branches_do_not_stream() -> None:
    model = ScriptedModel(["one", "two"])
    fan = ParallelAgent(
        name="fan",
        sub_agents=[LlmAgent(name="a", model=model), LlmAgent(name="b", model=model)],
    )
    service = InMemorySessionService()
    session = await service.create_session(app_name="app", user_id="u1")
    runner = Runner(agent=fan, app_name="app", session_service=service)
    events = [
        e
        async for e in runner.run_async(
            user_id="u1", session_id=session.id, message="go", streaming=True
        )
    ]
    assert not any(e.partial for e in events)
    assert sorted(e.text for e in events) == ["one", "two"]
