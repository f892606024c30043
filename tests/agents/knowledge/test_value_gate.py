"""Streaming a reply checked once it is written: whole sentences pass until one states
a value; nothing passes after it."""

from __future__ import annotations

from agents.knowledge.value_gate import ValueGate


def _streamed(*deltas: str) -> list[str]:
    shown: list[str] = []
    gate = ValueGate(shown.append)
    for delta in deltas:
        gate(delta)
    return shown


def test_value_gate_passes_whole_sentences_without_values() -> None:
    assert _streamed("Hello th", "ere! How can I ", "help you today? I'm") == [
        "Hello there!",
        " How can I help you today?",
    ]


def test_value_gate_stops_at_the_first_sentence_with_a_value() -> None:
    shown = _streamed(
        "Sorry about that. Your parcel", " arrives in 3 days. Thanks for ", "waiting.\n"
    )
    assert shown == ["Sorry about that."]


def test_value_gate_shows_nothing_of_a_reply_that_opens_with_a_value() -> None:
    assert _streamed("A refund of $49 is on its way. ", "Anything else?\n") == []
