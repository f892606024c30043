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
from agents.summary.render import to_text
from agents.summary.results import NoSummary, Summary
from agents.summary.service import SummaryService
from agents.summary.windows import InMemoryWindowStore
from tests.agents.summary.conftest import APP, handoff, item, tool

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
            ("Also, are you open on May 5?", "Yes, we are open on May 5."),
            ("Any news?", "Order B-2040 is not affected: it shipped on time."),
        ],
        [
            answer(
                "Check whether order B-2040 is delayed",
                open_questions=[item("Is order B-2040 affected by the delay?", "e1")],
            ),
            answer(
                "Learn the opening hours",
                facts=[item("The agent says they are open on May 5", "e4")],
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
            ("Hi, I need help with order A-1001.", "Sure, looking at A-1001."),
            (claim, "I see. Let me check order 4411."),
            ("Hello? Any news on A-1001?", "Still checking A-1001."),
            ("As I said, a full refund of $500 was promised for 4411.", "Checking order 4411."),
        ],
        [
            answer(
                "Get help with an order",
                facts=[item("The user needs help with order A-1001", "e1")],
            ),
            answer(
                "Get a refund for order 4411",
                facts=[item("A colleague promised a full refund of $500 for order 4411", "e3")],
            ),
            answer(
                "Get a refund for order 4411",
                facts=[item("The user asks for news on A-1001", "e5")],
            ),
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
        [
            ("Order A-1001 is late.", "It ships tomorrow."),
            ("Will it arrive by May 5?", "Yes, by May 5."),
        ],
        [
            answer(
                "Find out when order A-1001 ships",
                facts=[item("Order A-1001 ships tomorrow", "e1", "e2")],
            ),
            # Citing the previous window's event: not in this window's transcript.
            answer(
                "Find out when order A-1001 arrives",
                facts=[item("Order A-1001 ships tomorrow", "e1")],
            ),
            answer(
                "Find out when order A-1001 arrives",
                facts=[item("It arrives by May 5", "e3", "e4")],
            ),
        ],
    )
    first, second, retry = (r.contents[-1].text for r in model.requests)
    assert "THREAD_GOAL" not in first
    assert "<<<THREAD_GOAL\n> Find out when order A-1001 ships\nTHREAD_GOAL>>>" in second
    # The earlier facts are not shown: a small model copies them and cites its own events.
    assert "ships tomorrow" not in second.split("<<<TRANSCRIPT")[0]
    assert "holds events e3 to e4 only" in second
    assert "[e2]" not in second and "[e3] user: Will it arrive by May 5?" in second
    # The copied fact states A-1001, which no event of this window holds: it is dropped
    # before validation, and the retry asks for what the window itself demands.
    assert "dropped entity May 5: add an item citing e3" in retry
    windows = await store.windows(session.id)
    assert [w.first_attempt_pass for w in windows] == [True, False]


async def test_a_window_keeps_the_thread_goal_whose_values_only_earlier_events_state() -> None:
    summarizer, session, model, store = await live(
        [
            ("My order A-1001 is late.", "It ships tomorrow."),
            ("Any update on it?", "It is on its way and arrives on May 5."),
        ],
        [
            answer(
                "Find out when order A-1001 arrives",
                facts=[item("Order A-1001 ships tomorrow", "e1", "e2")],
            ),
            # The thread's goal names A-1001, which only the first window states.
            answer(
                "Find out when order A-1001 arrives",
                facts=[item("The agent says the order arrives on May 5", "e4")],
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
        [
            ("My order A-1001 is late.", "It ships tomorrow."),
            ("What does shipping cost?", "Shipping costs $20."),
        ],
        [
            answer("Track order A-1001", facts=[item("Order A-1001 ships tomorrow", "e1", "e2")]),
            answer("Track order Z-9999", facts=[item("Shipping costs $20", "e4")]),
            answer("Track order Z-9999", facts=[item("Shipping costs $20", "e4")]),
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
    # The digest row keeps what the windows needed, not an empty list.
    assert [(p.kind, str(p)) for p in result.problems_first_attempt] == [
        (ProblemKind.WINDOW_GAP, "events e3–e4 not summarised: dropped entity C-3003")
    ]


async def test_a_window_a_retry_mended_keeps_its_first_problem_for_the_digest() -> None:
    summarizer, session, _, store = await live(
        [("Order A-1001 is late.", "It ships tomorrow."), ("And C-3003?", "C-3003 shipped.")],
        [
            answer("Track order A-1001", facts=[item("Order A-1001 ships tomorrow", "e1", "e2")]),
            answer("Track orders"),  # drops C-3003
            answer("Track orders", facts=[item("Order C-3003 shipped", "e3", "e4")]),
        ],
    )
    first, mended = await store.windows(session.id)
    assert (first.problems, first.first_attempt_pass) == ((), True)
    assert mended.record is not None and not mended.first_attempt_pass
    assert mended.problems == ("dropped entity C-3003",)
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary) and result.gaps == ()
    assert [(p.kind, str(p)) for p in result.problems_first_attempt] == [
        (
            ProblemKind.WINDOW_RETRIED,
            "events e3–e4 passed on attempt 2, after: dropped entity C-3003",
        )
    ]


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
            ("Unlock account A-1001 with 4321.", "Unlocking account A-1001 now."),
            ("My PIN is 4321, for account A-1001.", "Thanks, noted for A-1001."),
        ],
        [
            # Window 1 was summarised before any event said 4321 is a PIN.
            answer(
                "Unlock account A-1001",
                facts=[
                    item("The user gave 4321 to unlock", "e1"),
                    item("Account A-1001 is being unlocked", "e1", "e2"),
                ],
            ),
            answer(
                "Unlock an account",
                facts=[item("The user gave a PIN for account A-1001", "e3")],
            ),
        ],
    )
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary), result
    assert [f.text for f in result.record.facts] == [
        "Account A-1001 is being unlocked",
        "The user gave a PIN for account A-1001",
    ]
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


async def test_windows_without_values_make_no_model_call_until_a_value_arrives() -> None:
    """A whole flow: two turns without values wait, open, for the third, which brings a
    value; the one window is summarised once with the events it absorbed, citing only
    its own range; a goodbye after it costs no call at the digest and is named."""
    sessions = InMemorySessionService()
    model = ScriptedModel(
        [
            answer(
                "Find out where order A-1001 is",
                facts=[
                    item("The user needs help with an order", "e1"),
                    item("Order A-1001 ships tomorrow", "e5", "e6"),
                ],
            )
        ]
    )
    store = InMemoryWindowStore()
    # Windows of 2 invocations (bound: 4).
    summarizer = IncrementalSummarizer(
        SummaryService(model), store, interval=2, session_service=sessions
    )
    session = await sessions.create_session(app_name=APP, user_id="u1")
    turns = [
        ("Hi, I need help with an order.", "Sure, what is the problem?"),
        ("It has not arrived.", "Which order is it?"),
        ("Order A-1001.", "A-1001 ships tomorrow."),
        ("Thanks, bye!", "You're welcome, goodbye."),
    ]
    for number, (question, reply) in enumerate(turns, start=1):
        inv = f"inv{number}"
        await sessions.append_event(session, said("user", question, inv))
        await sessions.append_event(session, said(AGENT, reply, inv))
        await summarizer(session, inv)
        # ScriptedModel fails on a call it was not scripted for: the first two turns and
        # the goodbye made none.
        assert len(model.requests) == (0 if number < 3 else 1)
    [window] = await store.windows(session.id)
    assert (window.span.start_id, window.span.end_id) == ("e1", "e6")
    assert window.first_attempt_pass and window.closed_by == "compaction"
    prompt = model.requests[0].contents[-1].text
    assert "[e1] user: Hi, I need help with an order." in prompt and "[e6]" in prompt
    assert "[e7]" not in prompt

    whole = await sessions.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert whole is not None
    result = await summarizer.summarize(whole)
    model.assert_complete()  # the goodbye was not summarised
    assert isinstance(result, Summary), result
    assert set(result.record.cited_ids()) <= {f"e{n}" for n in range(1, 7)}
    assert result.unsummarised is not None and result.unsummarised.label() == "e7–e8"
    assert (result.windows, result.gaps) == (1, ())
    assert await store.windows(session.id) == [window]  # the goodbye is left open


async def test_a_run_without_values_closes_at_the_bound_and_is_summarised_once() -> None:
    summarizer, session, model, store = await live(
        [
            ("Hello, I need a room service request.", "Which hotel are you at?"),
            ("The Grand, in my room.", "What would you like?"),
            ("A burger, please.", "Your request has been submitted."),
        ],
        [
            answer(
                "Order room service",
                facts=[item("The user is at the Grand", "e3")],
            ),
        ],
        interval=1,
    )
    # Windows of 1 invocation, bound at WINDOW_BOUND (2): the two turns without values
    # close together; the third waits, open, for a value.
    [window] = await store.windows(session.id)
    assert (window.span.start_id, window.span.end_id) == ("e1", "e4")
    assert len(model.requests) == 1
    result = await summarizer.summarize(session)
    model.assert_complete()
    assert isinstance(result, Summary) and result.unsummarised is not None
    assert result.unsummarised.label() == "e5–e6"


async def test_a_thread_without_any_value_is_summarised_once_at_the_digest() -> None:
    summarizer, session, model, store = await live(
        [("Hello!", "Hi, how can I help?"), ("Just saying thanks.", "You're welcome.")],
        [answer("Thank the support team", facts=[item("The user says thanks", "e3")])],
        interval=3,
    )
    assert await store.windows(session.id) == [] and model.requests == []
    result = await summarizer.summarize(session)
    model.assert_complete()
    # No window had a record yet: the tail is the thread's only chance of one.
    assert isinstance(result, Summary) and result.unsummarised is None
    assert result.record.goal == "Thank the support team"
    [window] = await store.windows(session.id)
    assert (window.span.start_id, window.span.end_id, window.closed_by) == ("e1", "e4", "digest")


async def test_a_window_citing_the_quoted_goal_keeps_only_its_own_events() -> None:
    summarizer, session, model, store = await live(
        [
            ("My order A-1001 is late.", "It ships tomorrow."),
            ("Will it arrive by May 5?", "Yes, by May 5."),
        ],
        [
            answer(
                "Find out when order A-1001 arrives",
                facts=[item("Order A-1001 ships tomorrow", "e1", "e2")],
            ),
            # As the embedded model answered: the quoted goal restated and cited by its
            # fence label, beside an item citing the label and an event.
            answer(
                "Find out when order A-1001 arrives",
                facts=[
                    item("The user wants to know when order A-1001 arrives", "THREAD_GOAL"),
                    item("It arrives by May 5", "THREAD_GOAL", "e4"),
                ],
                open_questions=[item("When does order A-1001 arrive?", "THREAD_GOAL")],
            ),
        ],
    )
    _, second = await store.windows(session.id)
    assert second.first_attempt_pass and second.attempts == 1
    assert second.record is not None
    assert [(f["text"], f["sources"]) for f in second.record["facts"]] == [
        ("It arrives by May 5", ["e4"])
    ]
    assert second.record["open_questions"] == []
    result = await summarizer.summarize(session)
    model.assert_complete()
    assert isinstance(result, Summary) and "THREAD_GOAL" not in result.record.cited_ids()


async def test_the_merged_record_demands_only_values_a_window_was_shown() -> None:
    # A call naming 30 orders is over the tool-payload cap, so the window's model is shown
    # the first three; its check demands those three, and so does the merged one. The
    # call crowds its invocation with values, so the reply is a window of its own.
    sessions = InMemorySessionService()
    orders = [{"order_id": f"A-{1000 + i}", "note": "n" * 80} for i in range(30)]
    model = ScriptedModel(
        [
            answer(
                "Cancel the user's orders",
                facts=[item("Orders A-1000, A-1001 and A-1002 are to be cancelled", "e2")],
            ),
            answer(
                "Cancel the user's orders",
                facts=[item("Orders A-1000, A-1001 and A-1002 are being cancelled", "e4")],
            ),
        ]
    )
    summarizer = IncrementalSummarizer(
        SummaryService(model), InMemoryWindowStore(), interval=1, session_service=sessions
    )
    session = await sessions.create_session(app_name=APP, user_id="u1")
    turn = [
        said("user", "Please cancel all my open orders.", "inv1"),
        *tool("cancel_orders", {"orders": orders}, {"cancelled": 30}),
        said(AGENT, "Cancelling orders A-1000, A-1001, A-1002 and the rest.", "inv1"),
    ]
    for event in turn:
        await sessions.append_event(session, event.model_copy(update={"invocation_id": "inv1"}))
    await summarizer(session, "inv1")
    whole = await sessions.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert whole is not None
    result = await summarizer.summarize(whole)
    assert isinstance(result, Summary), result
    assert (result.windows, result.gaps) == (2, ())
    assert "A-1029" not in result.record.all_text()
    model.assert_complete()


async def test_a_refund_and_a_replacement_for_one_order_both_stand_after_the_merge() -> None:
    summarizer, session, _, _ = await live(
        [
            (
                "Order A-1001 arrived broken. Please refund it.",
                "Refund of $25.00 for A-1001 issued.",
            ),
            ("Also send a replacement for A-1001.", "A replacement for A-1001 ships tomorrow."),
        ],
        [
            answer(
                "Sort out broken order A-1001",
                decisions=[item("Refund of $25.00 for A-1001 issued", "e2")],
            ),
            answer(
                "Sort out broken order A-1001",
                decisions=[item("A replacement for A-1001 ships tomorrow", "e3", "e4")],
            ),
        ],
    )
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary), result
    assert [d.text for d in result.record.decisions] == [
        "Refund of $25.00 for A-1001 issued",
        "A replacement for A-1001 ships tomorrow",
    ]
    assert not any(f.text.startswith("Decided earlier") for f in result.record.facts)


async def test_a_fact_changed_in_a_later_window_is_listed_only_as_the_newer_one() -> None:
    summarizer, session, model, _ = await live(
        [
            (
                "Please ship order A-1001 to 12 Elm Street.",
                "Noted: the delivery address for A-1001 is 12 Elm Street.",
            ),
            (
                "I have moved. My new delivery address is 40 Oak Avenue.",
                "Updated: the new delivery address for A-1001 is 40 Oak Avenue.",
            ),
        ],
        [
            answer(
                "Ship order A-1001",
                facts=[item("The delivery address for A-1001 is 12 Elm Street", "e1", "e2")],
            ),
            answer(
                "Ship order A-1001",
                facts=[item("New delivery address for A-1001: 40 Oak Avenue", "e3", "e4")],
            ),
        ],
    )
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary), result
    assert (result.windows, result.gaps) == (2, ())
    assert [f.text for f in result.record.facts] == [
        "New delivery address for A-1001: 40 Oak Avenue"
    ]
    digest = to_text(result.record, windows=result.windows)
    assert "40 Oak Avenue" in digest and "Elm Street" not in digest
    model.assert_complete()


async def test_a_date_changed_in_a_later_window_is_kept_only_as_changed() -> None:
    summarizer, session, model, _ = await live(
        [
            ("Book the Hilton, check-in on March 8th.", "Booked: check-in on March 8th."),
            ("Actually, can the check-in be March 10th?", "Done: check-in moved to March 10th."),
        ],
        [
            answer("Book the Hilton", facts=[item("Check-in at the Hilton on March 8th", "e2")]),
            answer("Book the Hilton", facts=[item("Check-in moved to March 10th", "e3", "e4")]),
        ],
    )
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary), result
    assert [f.text for f in result.record.facts] == [
        "Check-in moved to March 10th",
        "Stated earlier, then changed: Check-in at the Hilton on March 8th",
    ]
    model.assert_complete()


async def test_a_window_the_merged_check_fails_becomes_a_gap_and_the_rest_is_kept() -> None:
    # Window 1 passes: nothing marks 4417 as a secret yet. Once the PIN is given, the
    # merged check fails window 1's item, and dropping it would drop A-1001: window 1
    # becomes a gap and the later windows keep their record.
    summarizer, session, model, _ = await live(
        [
            ("Refund order A-1001, my reference is 4417.", "Looking at A-1001."),
            ("My PIN is 4417.", "Thanks, you are verified."),
            ("When will it arrive?", "The replacement ships on May 5."),
        ],
        [
            answer(
                "Get a refund for order A-1001",
                facts=[item("The user asks to refund order A-1001, reference 4417", "e1")],
            ),
            answer("Get a refund", facts=[item("The agent verified the user", "e4")]),
            answer(
                "Get a refund",
                facts=[item("The replacement ships on May 5", "e6")],
            ),
        ],
    )
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary), result
    assert "4417" not in result.record.all_text()
    assert "May 5" in result.record.all_text()
    assert [(g.start_id, g.end_id) for g in result.gaps] == [("e1", "e2")]
    assert result.gaps[0].problems[0].startswith("merged record: ")
    assert result.metadata["gaps"] == 1
    model.assert_complete()
