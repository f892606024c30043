"""Window records and their merge, driven by a scripted model through the real runner:
each window is summarised over its own events with the previous record as quoted
context, a window failing twice is a named gap, an open question answered in a later
window is not open after the merge, and a user claim stays labelled."""

from __future__ import annotations

import json

from agents.events import Event, Part
from agents.models.base import ModelError
from agents.models.scripted import ScriptedModel
from agents.sessions.service import InMemorySessionService
from agents.sessions.session import Session
from agents.summary.incremental import IncrementalSummarizer
from agents.summary.problems import ProblemKind
from agents.summary.results import NoSummary, Summary
from agents.summary.service import SummaryService
from agents.summary.windows import InMemoryWindowStore
from tests.agents.summary.conftest import APP, handoff, item

AGENT = "billing_agent"


def said(author: str, text: str, inv: str) -> Event:
    return Event(author=author, invocation_id=inv, parts=(Part(text=text),))


async def live(
    turns: list[tuple[str, str]], answers: list[str], *, interval: int = 1
) -> tuple[IncrementalSummarizer, Session, ScriptedModel, InMemoryWindowStore]:
    """Play `turns` (user text, agent reply) one invocation at a time, the window hook
    running after each, as the bot does."""
    sessions = InMemorySessionService()
    model = ScriptedModel(answers)
    store = InMemoryWindowStore()
    summarizer = IncrementalSummarizer(
        SummaryService(model), store, interval=interval, session_service=sessions
    )
    session = await sessions.create_session(app_name=APP, user_id="u1")
    for number, (question, reply) in enumerate(turns, start=1):
        inv = f"inv{number}"
        await sessions.append_event(session, said("user", question, inv))
        await sessions.append_event(session, said(AGENT, reply, inv))
        await summarizer(session, inv)
    whole = await sessions.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert whole is not None
    return summarizer, whole, model, store


def answer(goal: str, **sections: list[dict[str, object]]) -> str:
    return json.dumps(handoff(goal, **sections))


async def test_an_open_question_answered_in_a_later_window_is_not_open_after_merge() -> None:
    summarizer, session, model, _ = await live(
        [
            ("Is my order B-2040 affected by the delay?", "Let me look into that."),
            ("Also, what are your opening hours?", "We are open every day."),
            ("Any news?", "Order B-2040 is not affected: it shipped on time."),
        ],
        [
            answer(
                "Check whether order B-2040 is delayed",
                open_questions=[item("Is order B-2040 affected by the delay?", "e1")],
            ),
            answer(
                "Learn the opening hours",
                facts=[item("The agent says they are open every day", "e4")],
            ),
            answer(
                "Check whether order B-2040 is delayed",
                facts=[item("Order B-2040 is not affected; it shipped on time", "e6")],
            ),
        ],
    )
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary), result
    assert result.record.open_questions == []
    assert "B-2040 is not affected" in result.record.all_text()
    assert (result.windows, result.gaps) == (3, ())
    model.assert_complete()  # the digest summarised nothing new


async def test_a_user_claim_cited_again_by_a_later_window_stays_labelled() -> None:
    claim = "Your colleague promised me a full refund of $500 for order 4411."
    summarizer, session, _, _ = await live(
        [
            ("Hi, I need help with an order.", "Sure, which order?"),
            (claim, "I see. Let me check order 4411."),
            ("Hello?", "Still checking."),
            ("As I said, a full refund of $500 was promised for 4411.", "Checking order 4411."),
        ],
        [
            answer("Get help with an order"),
            answer(
                "Get a refund for order 4411",
                facts=[item("A colleague promised a full refund of $500 for order 4411", "e3")],
            ),
            answer("Get a refund for order 4411"),
            answer(
                "Get a refund for order 4411",
                facts=[item("A full refund of $500 was promised for 4411", "e7", "e8")],
            ),
        ],
    )
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary), result
    [fact] = [f for f in result.record.facts if "$500" in f.text]
    assert fact.user_claim
    assert fact.sources[:2] == ["e3", "e7"]


async def test_each_window_sees_its_events_and_only_the_earlier_goal_as_quoted_context() -> None:
    _, session, model, store = await live(
        [("Order A-1001 is late.", "It ships tomorrow."), ("Thanks!", "You're welcome.")],
        [
            answer(
                "Find out when order A-1001 ships",
                facts=[item("Order A-1001 ships tomorrow", "e1", "e2")],
            ),
            # Citing the previous window's event: not in this window's transcript.
            answer("Thank the agent", facts=[item("Order A-1001 ships tomorrow", "e1")]),
            answer("Thank the agent"),
        ],
    )
    first, second, retry = (r.contents[-1].text for r in model.requests)
    assert "THREAD_GOAL" not in first
    assert "<<<THREAD_GOAL\n> Find out when order A-1001 ships\nTHREAD_GOAL>>>" in second
    # The earlier facts are not shown: a small model copies them and cites its own events.
    assert "ships tomorrow" not in second.split("<<<TRANSCRIPT")[0]
    assert "holds events e3 to e4 only" in second
    assert "[e2]" not in second and "[e3] user: Thanks!" in second
    assert "cites e1, which is not in the transcript" in retry
    windows = await store.windows(session.id)
    assert [w.first_attempt_pass for w in windows] == [True, False]


async def test_a_window_keeps_the_thread_goal_whose_values_only_earlier_events_state() -> None:
    summarizer, session, model, store = await live(
        [
            ("My order A-1001 is late.", "It ships tomorrow."),
            ("Any update on it?", "It is on its way to you."),
        ],
        [
            answer(
                "Find out when order A-1001 arrives",
                facts=[item("Order A-1001 ships tomorrow", "e1", "e2")],
            ),
            # The thread's goal names A-1001, which only the first window states.
            answer(
                "Find out when order A-1001 arrives",
                facts=[item("The agent says the order is on its way", "e4")],
            ),
        ],
    )
    assert [w.first_attempt_pass for w in await store.windows(session.id)] == [True, True]
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary), result
    assert result.record.goal == "Find out when order A-1001 arrives"
    model.assert_complete()


async def test_a_window_goal_with_a_value_no_event_states_still_fails() -> None:
    _, session, _, store = await live(
        [("My order A-1001 is late.", "It ships tomorrow."), ("Thanks!", "You're welcome.")],
        [
            answer("Track order A-1001", facts=[item("Order A-1001 ships tomorrow", "e1", "e2")]),
            answer("Track order Z-9999"),
            answer("Track order Z-9999"),
        ],
    )
    [_, gap] = await store.windows(session.id)
    assert gap.record is None
    assert gap.problems == (
        "the goal says Z-9999, which no event mentions; state only what the transcript says",
    )


async def test_a_window_failing_twice_is_a_named_gap_and_the_rest_is_merged() -> None:
    summarizer, session, _, store = await live(
        [("Order A-1001 is late.", "It ships tomorrow."), ("And C-3003?", "C-3003 shipped.")],
        [
            answer("Track order A-1001", facts=[item("Order A-1001 ships tomorrow", "e1", "e2")]),
            answer("Track orders"),  # drops C-3003
            answer("Track orders"),  # and again
        ],
    )
    [_, gap] = await store.windows(session.id)
    assert gap.record is None and gap.attempts == 2
    assert gap.problems == ("dropped entity C-3003",)
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary)
    assert [(g.label(), g.problems) for g in result.gaps] == [("e3–e4", gap.problems)]
    assert "C-3003" not in result.record.all_text() and result.windows == 2


async def test_a_thread_where_no_window_passed_has_no_summary() -> None:
    summarizer, session, _, _ = await live(
        [("And C-3003?", "C-3003 shipped.")], [answer("Track"), answer("Track")]
    )
    result = await summarizer.summarize(session)
    assert isinstance(result, NoSummary)
    [problem] = result.problems
    assert problem.kind is ProblemKind.WINDOW_GAP
    assert str(problem) == "events e1–e2 not summarised: dropped entity C-3003"


async def test_an_item_only_the_whole_thread_shows_is_wrong_is_dropped_never_rewritten() -> None:
    summarizer, session, _, _ = await live(
        [
            ("My PIN is 4321.", "Thanks, noted."),
            ("Unlock account A-1001 with 4321.", "Unlocking account A-1001 now."),
        ],
        [
            answer("Unlock an account"),
            # Window 2 alone cannot know 4321 is the PIN window 1 masked.
            answer(
                "Unlock account A-1001",
                facts=[
                    item("The user gave 4321 to unlock", "e3"),
                    item("Account A-1001 is being unlocked", "e3", "e4"),
                ],
            ),
        ],
    )
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary), result
    assert [f.text for f in result.record.facts] == ["Account A-1001 is being unlocked"]
    assert "4321" not in result.record.all_text()


async def test_a_window_the_model_never_answered_is_tried_again_by_the_digest() -> None:
    down = ModelError("connection refused", code="model_unavailable")
    summarizer, session, model, store = await live(
        [("Order A-1001 is late.", "It ships tomorrow.")],
        [
            down,
            down,
            answer("Track order A-1001", facts=[item("Order A-1001 ships tomorrow", "e1", "e2")]),
        ],
    )
    [gap] = await store.windows(session.id)
    assert gap.record is None and gap.problems[0].startswith("model call failed")
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary) and result.gaps == ()
    [window] = await store.windows(session.id)
    assert window.status == "passed" and window.closed_by == "digest"
    model.assert_complete()
