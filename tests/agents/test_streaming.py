"""Streamed replies in the runtime: partial text events, never stored, only for prose."""

from __future__ import annotations

from agents import AgentTool, BaseAgent, LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from agents.events import Event
from agents.models.base import ModelError
from agents.models.scripted import ScriptedModel, deltas, json_text, transfer
from agents.runner import MODEL_FAILURE_TEXT, Runner
from agents.sessions.service import InMemorySessionService


def tree(model: ScriptedModel) -> LlmAgent:
    billing = LlmAgent(name="billing_agent", description="Refunds and invoices.")
    return LlmAgent(name="root", description="Front door.", model=model, sub_agents=[billing])


async def run(
    agent: BaseAgent, *, streaming: bool, message: str = "charged twice"
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


async def test_decide_first_streams_nothing_its_reply_comes_once_decided() -> None:
    """A decide-first draft may still be reviewed away, so nothing of it streams: the
    reply comes as the step's complete event alone."""
    model = ScriptedModel(
        [
            json_text({"choice": "billing_agent"}),
            json_text("billing_agent"),  # billing_agent keeps the request
            "We refund within 5 days.",
        ],
        decide_first=True,
    )
    yielded, stored = await run(tree(model), streaming=True)
    assert not any(e.partial for e in yielded)
    assert (yielded[-1].author, yielded[-1].text) == ("billing_agent", "We refund within 5 days.")
    assert stored[-1].text == "We refund within 5 days."


async def test_a_draft_the_review_swaps_never_streams() -> None:
    """billing_agent promises a refund; the review has policy_checker consulted first and
    the reply is written again: no partial event ever carried the first draft."""
    policy = LlmAgent(name="policy_checker", description="Says whether a refund is allowed.")
    billing = LlmAgent(
        name="billing_agent",
        description="Refunds and invoices.",
        tools=[AgentTool(policy, consult_before="promise a refund")],
    )
    root = LlmAgent(name="root", description="Front door.", sub_agents=[billing])
    model = ScriptedModel(
        [
            json_text("billing_agent"),  # root routes
            json_text("billing_agent"),  # billing answers itself
            "I've refunded your duplicate charge.",  # the unchecked draft
            json_text("yes"),  # the review: it promises a refund
            json_text({"request": "Refund a duplicate charge?"}),
            "DENIED: duplicates are refunded only after the bank confirms.",
            json_text("billing_agent"),  # billing answers itself (root is on offer too)
            "We'll refund it once the bank confirms the duplicate.",
        ],
        decide_first=True,
        chunk_chars=4,
    )
    root.model = policy.model = model
    yielded, stored = await run(root, streaming=True)
    assert not any(e.partial for e in yielded)
    assert "refunded your" not in " ".join(e.text for e in stored)
    assert stored[-1].text == "We'll refund it once the bank confirms the duplicate."
    model.assert_complete()


async def test_only_the_last_step_of_a_pipeline_streams() -> None:
    model = ScriptedModel(["The cache is corrupt.", "1. Clear the cache."])
    pipe = SequentialAgent(
        name="tech_support",
        sub_agents=[
            LlmAgent(name="diagnose", model=model, output_key="diagnosis"),
            LlmAgent(name="fix_writer", model=model, instruction="Fix: {diagnosis}"),
        ],
    )
    yielded, _ = await run(pipe, streaming=True)
    assert [(e.author, e.text) for e in yielded if e.partial] == [
        ("fix_writer", "1. Clear the cache.")
    ]


async def test_loop_rounds_do_not_stream() -> None:
    model = ScriptedModel(["draft one", "draft two"])
    loop = LoopAgent(name="refine", sub_agents=[LlmAgent(name="writer", model=model)],
                     max_iterations=2)  # fmt: skip
    yielded, _ = await run(loop, streaming=True)
    assert not any(e.partial for e in yielded)
    assert [e.text for e in yielded if e.text] == ["draft one", "draft two"]


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
