"""Compaction: the seed's timeline, pending calls, failures, and bounds."""

from __future__ import annotations

from typing import Any

import pytest

from agents import Event, LlmAgent, Part, ToolContext
from agents.compaction import (
    Compactor,
    EventsCompactionConfig,
    LlmEventSummarizer,
    select_window,
)
from agents.events import FunctionCall, FunctionResponse
from agents.history import SUMMARY_PREFIX
from agents.models.scripted import ScriptedModel, call
from agents.sessions.service import InMemorySessionService, SessionService
from tests.agents.conversation import Conversation


class RecordingSummarizer:
    """Returns Summary A, B, ... and remembers each window it was given."""

    def __init__(self) -> None:
        self.windows: list[list[Event]] = []

    async def summarize_events(self, events: list[Event]) -> Event | None:
        self.windows.append(events)
        return Event(
            author="compaction", parts=(Part(text=f"Summary {chr(64 + len(self.windows))}"),)
        )


def compacting(
    summarizer: Any, service: SessionService | None = None, **config: Any
) -> tuple[Conversation, ScriptedModel, SessionService]:
    service = service or InMemorySessionService()
    compactor = Compactor(
        service,
        EventsCompactionConfig(
            summarizer=summarizer, compaction_interval=3, overlap_size=1, **config
        ),
    )
    model = ScriptedModel()
    conversation = Conversation(
        LlmAgent(name="root"), model, service=service, after_invocation=[compactor]
    )
    return conversation, model, service


async def turn(conversation: Conversation, model: ScriptedModel, n: int) -> None:
    model.add(f"reply {n}")
    await conversation.send(f"message {n}")
    await conversation.runner.drain()


async def compactions(conversation: Conversation) -> list[Event]:
    session = await conversation.service.get_session(
        app_name="support", user_id="u1", session_id=conversation.session_id or ""
    )
    assert session is not None
    return [e for e in session.events if e.is_compaction]


async def test_compaction_follows_the_seed_timeline() -> None:
    summarizer = RecordingSummarizer()
    conversation, model, _ = compacting(summarizer)
    counts = []
    for n in range(1, 8):
        await turn(conversation, model, n)
        counts.append(len(await compactions(conversation)))
    assert counts == [0, 0, 1, 1, 1, 2, 2]

    first, second = summarizer.windows
    assert [e.text for e in first] == [t for n in (1, 2, 3) for t in (f"message {n}", f"reply {n}")]
    # The second window: summary A, then invocations 3 to 6 (overlap 1).
    assert second[0].actions.compaction is not None
    assert second[0].actions.compaction.summary == "Summary A"
    assert [e.text for e in second[1:]] == [
        t for n in (3, 4, 5, 6) for t in (f"message {n}", f"reply {n}")
    ]
    summary_b = (await compactions(conversation))[-1].actions.compaction
    assert summary_b is not None
    assert (summary_b.start_event_id, summary_b.end_event_id) == ("e5", "e13")

    # Invocation 7's request: summary B (quoted context, never a system message), then
    # invocation 7's events.
    request = model.requests[-1]
    assert [(c.role, c.text) for c in request.contents] == [
        ("user", SUMMARY_PREFIX + "> Summary B"),
        ("user", "message 7"),
    ]


class CountingSessions(InMemorySessionService):
    """Counts the windowed reloads compaction makes."""

    def __init__(self) -> None:
        super().__init__()
        self.windowed_loads = 0

    async def get_session(self, **kwargs: Any) -> Any:
        self.windowed_loads += bool(kwargs.get("since_compaction"))
        return await super().get_session(**kwargs)


async def test_compaction_reloads_only_when_the_invocation_closes_a_window() -> None:
    service = CountingSessions()
    conversation, model, _ = compacting(RecordingSummarizer(), service)
    loads = []
    for n in range(1, 7):
        before = service.windowed_loads
        await turn(conversation, model, n)
        # The runner's own load of each turn, plus compaction's when a window closes.
        loads.append(service.windowed_loads - before)
    assert loads == [1, 1, 2, 1, 1, 2]
    assert len(await compactions(conversation)) == 2


async def test_compaction_same_results_when_reloaded_from_sqlite(tmp_path: Any) -> None:
    storage = pytest.importorskip("storage.database")
    db = await storage.Database.open(f"sqlite+aiosqlite:///{tmp_path}/c.db")
    try:
        summarizer = RecordingSummarizer()
        conversation, model, _ = compacting(summarizer, service=db.sessions)
        for n in range(1, 8):
            await turn(conversation, model, n)
        assert [c.text for c in model.requests[-1].contents] == [
            SUMMARY_PREFIX + "> Summary B",
            "message 7",
        ]
        stored = await compactions(conversation)
        assert [e.actions.compaction.summary for e in stored if e.actions.compaction] == [
            "Summary A",
            "Summary B",
        ]
    finally:
        await db.close()


def lookup(order_id: str, tool_context: ToolContext) -> dict[str, str]:
    """Look up an order."""
    return {"order_id": order_id, "status": "late"}


def test_compaction_never_ends_window_on_pending_call() -> None:
    def ev(seq: int, inv: str, author: str, **kw: Any) -> Event:
        return Event(id=f"e{seq}", invocation_id=inv, author=author, **kw)

    call_part = Part(function_call=FunctionCall(id="c1", name="lookup", args={}))
    events = [
        ev(1, "i1", "user", parts=(Part(text="a"),)),
        ev(2, "i1", "root", parts=(Part(text="b"),)),
        ev(3, "i2", "user", parts=(Part(text="c"),)),
        ev(4, "i2", "root", parts=(Part(text="d"),)),
        ev(5, "i3", "user", parts=(Part(text="e"),)),
        ev(6, "i3", "root", parts=(call_part,)),
    ]
    assert select_window(events, interval=3, overlap=1) is None
    response = Part(function_response=FunctionResponse(id="c1", name="lookup", response={}))
    events.append(ev(7, "i3", "root", parts=(response,)))
    window = select_window(events, interval=3, overlap=1)
    assert window is not None and window.end_event_id == "e7"


async def test_compaction_window_keeps_tool_calls_and_results() -> None:
    summarizer = RecordingSummarizer()
    conversation, model, _ = compacting(summarizer)
    conversation.runner.agent = LlmAgent(name="root", tools=[lookup])
    model.add(call("lookup", order_id="A-1001"), "It is late.")
    await conversation.send("where is A-1001?")
    await turn(conversation, model, 2)
    await turn(conversation, model, 3)
    (window,) = summarizer.windows
    assert window[1].function_calls[0].name == "lookup"
    assert window[2].function_responses[0].response["order_id"] == "A-1001"


class FailingSummarizer:
    async def summarize_events(self, events: list[Event]) -> Event | None:
        raise RuntimeError("summariser down")


class SkippingSummarizer:
    async def summarize_events(self, events: list[Event]) -> Event | None:
        return None


class NonTextSummarizer:
    async def summarize_events(self, events: list[Event]) -> Any:
        return {"summary": 42}


class HugeSummarizer:
    async def summarize_events(self, events: list[Event]) -> Event | None:
        return Event(author="compaction", parts=(Part(text="x" * 1_000_000),))


async def test_compaction_failure_leaves_turn_intact_and_writes_nothing() -> None:
    from agents.metrics import REGISTRY

    conversation, model, _ = compacting(FailingSummarizer())
    for n in range(1, 5):
        await turn(conversation, model, n)
    assert await compactions(conversation) == []
    assert REGISTRY.get("support_bot_compaction_failures_total") == 2
    assert model.requests[-1].contents[-1].text == "message 4"


async def test_compaction_summarizer_returning_none_skips_window() -> None:
    conversation, model, _ = compacting(SkippingSummarizer())
    for n in range(1, 4):
        await turn(conversation, model, n)
    assert await compactions(conversation) == []


async def test_compaction_rejects_non_text_summary() -> None:
    from agents.metrics import REGISTRY

    conversation, model, _ = compacting(NonTextSummarizer())
    for n in range(1, 4):
        await turn(conversation, model, n)
    assert await compactions(conversation) == []
    assert REGISTRY.get("support_bot_compaction_failures_total") == 1


async def test_compaction_truncates_huge_summary(caplog: pytest.LogCaptureFixture) -> None:
    conversation, model, _ = compacting(HugeSummarizer(), max_summary_chars=1000)
    for n in range(1, 4):
        await turn(conversation, model, n)
    (event,) = await compactions(conversation)
    assert event.actions.compaction is not None
    assert len(event.actions.compaction.summary) < 1100
    assert "truncated" in caplog.text


async def test_compaction_llm_summarizer_records_usage_and_uses_template() -> None:
    summary_model = ScriptedModel(["Customer asked about A-1001."])
    summarizer = LlmEventSummarizer(
        summary_model, prompt_template="Sum up:\n{conversation_history}"
    )
    conversation, model, _ = compacting(summarizer)
    for n in range(1, 4):
        await turn(conversation, model, n)
    (event,) = await compactions(conversation)
    assert event.usage is not None and event.usage.prompt_tokens > 0
    prompt = summary_model.requests[0].contents[0].text
    assert prompt.startswith("Sum up:\n[e1] user: message 1")
    with pytest.raises(ValueError, match="conversation_history"):
        LlmEventSummarizer(summary_model, prompt_template="no placeholder")


@pytest.mark.parametrize(
    ("interval", "overlap", "message"),
    [
        (0, 0, "compaction_interval must be at least 1, not 0"),
        (3, -1, "overlap_size must be at least 0 and below compaction_interval \\(3\\), not -1"),
        (3, 3, "overlap_size must be at least 0 and below compaction_interval \\(3\\), not 3"),
    ],
)
def test_compaction_config_rejects_an_interval_or_overlap_out_of_bounds(
    interval: int, overlap: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        EventsCompactionConfig(
            summarizer=RecordingSummarizer(), compaction_interval=interval, overlap_size=overlap
        )
    assert (
        EventsCompactionConfig(
            summarizer=RecordingSummarizer(), compaction_interval=1, overlap_size=0
        ).compaction_interval
        == 1
    )
