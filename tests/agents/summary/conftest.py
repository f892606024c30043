"""Sessions for the summary tests: the seed's refund handoff and friends."""

from __future__ import annotations

from typing import Any

import pytest

from agents.events import Event, FunctionCall, FunctionResponse, Part
from agents.sessions.service import InMemorySessionService
from agents.sessions.session import Session

APP = "support"
AGENT = "billing_agent"


def user(text: str, **kw: Any) -> Event:
    return Event(author="user", parts=(Part(text=text),), **kw)


def agent(text: str, **kw: Any) -> Event:
    return Event(author=AGENT, parts=(Part(text=text),), **kw)


def tool(name: str, args: dict[str, Any], result: dict[str, Any]) -> list[Event]:
    call = FunctionCall(name=name, args=args)
    return [
        Event(author=AGENT, parts=(Part(function_call=call),)),
        Event(
            author=AGENT,
            parts=(
                Part(function_response=FunctionResponse(id=call.id, name=name, response=result)),
            ),
        ),
    ]


def refund_events() -> list[Event]:
    """The seed's worked example, e1..e8."""
    return [
        user(
            "Hi, my order A-1001 is late. It should have arrived last week.",
            custom_metadata={"slack_ts": "1.1"},
        ),
        *tool(
            "lookup_order",
            {"order_id": "A-1001"},
            {"order_id": "A-1001", "status": "shipped", "shipped_on": "2024-09-28"},
        ),
        user("Can I get a refund of the shipping fee?", custom_metadata={"slack_ts": "1.2"}),
        *tool("refund_shipping", {"order_id": "A-1001", "amount": 12.50}, {"status": "refunded"}),
        agent(
            "I've issued a refund of $12.50 for the shipping fee on A-1001. "
            "It will arrive within five working days.",
            custom_metadata={"slack_ts": "1.3"},
        ),
        user("Thanks. Is my other order B-2040 affected too?", custom_metadata={"slack_ts": "1.4"}),
    ]


async def make_session(service: InMemorySessionService, events: list[Event]) -> Session:
    session = await service.create_session(app_name=APP, user_id="u1")
    for event in events:
        await service.append_event(session, event)
    return session


@pytest.fixture
def sessions() -> InMemorySessionService:
    return InMemorySessionService()


@pytest.fixture
async def refund_session(sessions: InMemorySessionService) -> Session:
    return await make_session(sessions, refund_events())


def item(text: str, *sources: str) -> dict[str, Any]:
    return {"text": text, "sources": list(sources)}


def handoff(goal: str, **sections: list[dict[str, Any]]) -> dict[str, Any]:
    """A record answer: `goal` and the given sections, the others empty."""
    record: dict[str, Any] = {
        "goal": goal,
        "facts": [],
        "decisions": [],
        "commitments": [],
        "open_questions": [],
    }
    record.update(sections)
    return record


def refund_record(**overrides: Any) -> dict[str, Any]:
    """The seed's first answer: good, except that it drops B-2040."""
    record: dict[str, Any] = {
        "goal": "Get a refund of the shipping fee for late order A-1001",
        "facts": [
            item("Order A-1001 shipped on 2024-09-28, later than expected", "e1", "e3"),
            item("The $12.50 shipping fee for A-1001 was refunded", "e5", "e6"),
        ],
        "decisions": [item("Refund the shipping fee for A-1001", "e4", "e5")],
        "commitments": [item("Refund of $12.50 arrives within five working days", "e7")],
        "open_questions": [],
    }
    record.update(overrides)
    return record
