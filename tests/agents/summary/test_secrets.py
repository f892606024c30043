"""Secrets masked across the whole thread: a PIN whose cue sits in one window and whose
digits sit in the next never reaches the summary model or the stored windows."""

from __future__ import annotations

import json

from agents.events import Event, Part
from agents.summary.entities import EntityExtractor
from agents.summary.results import Summary
from agents.summary.secrets import secrets_within
from tests.agents.summary.conftest import item
from tests.agents.summary.test_incremental import answer, live

PIN = "4821"


def said(author: str, text: str, seq: int) -> Event:
    return Event(id=f"e{seq}", author=author, parts=(Part(text=text),))


def test_a_cue_at_the_end_of_one_message_makes_the_next_messages_digits_a_secret() -> None:
    entities = EntityExtractor().extract(
        [
            said("user", "Order A-1001 was charged twice. To verify me, my PIN is", 1),
            said("billing_agent", "Go ahead.", 2),
            said("user", PIN, 3),
        ]
    )
    [secret] = [e for e in entities if e.sensitive]
    assert (secret.type, secret.value, secret.event_ids) == ("pin", PIN, ("e3",))


def test_a_secret_the_thread_marks_is_masked_in_a_window_that_does_not() -> None:
    [secret] = [
        e for e in EntityExtractor().extract([said("user", f"my PIN is {PIN}", 1)]) if e.sensitive
    ]
    later = [said("billing_agent", f"Thanks, {PIN} checks out.", 7)]
    assert [(s.value, s.event_ids) for s in secrets_within([secret], later)] == [(PIN, ("e7",))]


async def test_a_pin_split_across_windows_never_reaches_the_model_or_the_stored_windows() -> None:
    summarizer, session, model, store = await live(
        [
            (
                "Order A-1001 was charged twice. To verify me, my PIN is",
                "Please send the digits of order A-1001's PIN.",
            ),
            (PIN, "Verified. I will refund the duplicate charge on A-1001."),
        ],
        [
            answer(
                "Get the duplicate charge on A-1001 refunded",
                facts=[item("Order A-1001 was charged twice", "e1")],
            ),
            answer(
                "Get the duplicate charge on A-1001 refunded",
                facts=[item(f"The user gave PIN {PIN}", "e3")],
                commitments=[item("The agent will refund the duplicate charge on A-1001", "e4")],
            ),
            answer(
                "Get the duplicate charge on A-1001 refunded",
                commitments=[item("The agent will refund the duplicate charge on A-1001", "e4")],
            ),
        ],
    )
    result = await summarizer.summarize(session)
    assert isinstance(result, Summary), result
    assert len(model.requests) == 3  # window 1, window 2, its retry for the repeated PIN
    sent = [c.text or "" for r in model.requests for c in r.contents]
    assert any("A-1001" in text for text in sent)
    assert not any(PIN in text for text in sent)
    stored = await store.windows(session.id)
    assert [w.status for w in stored] == ["passed", "passed"]
    assert PIN not in json.dumps([(w.record, w.problems) for w in stored], default=str)
    assert PIN not in result.record.all_text()
