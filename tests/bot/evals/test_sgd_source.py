"""The second summary source (bench/data/sgd_transcripts.jsonl) and its converter: labels
are values the dialogue writes, grouped by the dataset's canonical value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.sgd_transcripts import check, convert
from bot.evals.dataset import load_conversations
from bot.evals.summaries import split_half

DATA = Path(__file__).parents[3] / "bench" / "data" / "sgd_transcripts.jsonl"


def turn(speaker: str, text: str, *spans: tuple[str, str, str], call: bool = False) -> dict:
    """An SGD turn whose `spans` are (slot, surface, canonical value)."""
    slots = [
        {"slot": slot, "start": text.index(s), "exclusive_end": text.index(s) + len(s)}
        for slot, s, _ in spans
    ]
    actions = [
        {"act": "INFORM", "slot": slot, "values": [s], "canonical_values": [canon]}
        for slot, s, canon in spans
    ]
    frame: dict = {"service": "RentalCars_3", "slots": slots, "actions": actions}
    if call:
        frame["service_call"] = {"method": "ReserveCar", "parameters": {"start_date": "2019-03-08"}}
        frame["service_results"] = [{"start_date": "2019-03-08", "price_per_day": "$25.00"}]
    return {"speaker": speaker, "utterance": text, "frames": [frame]}


DIALOGUE = {
    "dialogue_id": "1_00001",
    "services": ["RentalCars_3"],
    "turns": [
        turn("USER", "I need a car from the 8th.", ("start_date", "the 8th", "2019-03-08")),
        turn(
            "SYSTEM",
            "A sedan from March 8th is $25.00 a day.",
            ("start_date", "March 8th", "2019-03-08"),
            ("price_per_day", "$25.00", "$25.00"),
        ),
        turn("USER", "Until tomorrow then.", ("end_date", "tomorrow", "2019-03-09")),
        turn("SYSTEM", "Booked.", call=True),
    ],
}


def test_a_label_groups_surfaces_by_canonical_value_and_names_a_month() -> None:
    row = convert(DIALOGUE, file="test/dialogues_001.json", commit="0" * 40)
    labels = {(e["type"], e["value"]): e for e in row["expected_entities"]}
    assert labels[("date", "March 8th")]["surfaces"] == ["the 8th", "March 8th"]
    assert labels[("date", "March 8th")]["event_ids"] == ["e1", "e2"]
    assert ("amount", "$25.00") in labels
    assert all(value != "tomorrow" for _, value in labels)  # names no checkable day
    assert [e["author"] for e in row["events"]] == ["user", "agent", "user", "tool", "agent"]
    assert row["events"][3]["text"].startswith('ReserveCar({"start_date": "2019-03-08"})')


def test_a_label_whose_value_its_event_does_not_write_is_an_error() -> None:
    row = convert(DIALOGUE, file="test/dialogues_001.json", commit="0" * 40)
    row["expected_entities"][0]["event_ids"].append("e3")
    with pytest.raises(ValueError, match="no surface"):
        check(row)


def test_the_committed_source_loads_and_every_label_is_in_its_events() -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        check(row)
    conversations = list(load_conversations(DATA))
    assert len(conversations) == len(rows) == 40
    assert all(c.expected for c in conversations)


def test_the_source_splits_into_a_fixed_look_half_and_measure_half() -> None:
    ids = [c.id for c in load_conversations(DATA)]
    halves = {h: [i for i in ids if split_half(i) == h] for h in ("look", "measure")}
    assert halves == {h: [i for i in ids if split_half(i) == h] for h in halves}
    # The counts docs/evaluations.md reports for this file.
    assert (len(halves["look"]), len(halves["measure"])) == (21, 19)
