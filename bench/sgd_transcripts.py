"""Schema-Guided Dialogue (SGD) conversations as transcripts.jsonl rows, labels included.

SGD (google-research-datasets/dstc8-schema-guided-dialogue, CC BY-SA 4.0) is a
task-oriented dialogue set whose every slot value is annotated with its character span in
the turn and its canonical value (a date's "the 8th" and "March 8th" are both
`2019-03-08`). That makes high-value labels automatic: each span of a labelled slot is a
surface, spans with one canonical value are one entity, and the entity's events are the
turns that carry a span. The test split's services (restaurants, hotels, payments, events,
trains, buses, rental cars, salons, homes, ...) are neither in the project's
`transcripts.jsonl` (airline, bank, retail) nor in its training of the summary aids.

Mapping of a dialogue:
- a USER turn -> a `user` event; a SYSTEM turn -> an `agent` event, preceded by a `tool`
  event when the system called a service (`method(parameters) -> first result`, written
  like transcripts.jsonl's tool events: the service payload writes dates and times in
  canonical form, "2019-03-08" and "12:00", while the turns say "March 8th" and "12 pm");
- labels: slots whose name says date (`date`, `check_in_date`, ...) -> `date`; time
  (`time`, `pickup_time`, ...) -> `time`; amount, price, fare, balance, rent -> `amount`;
  `phone_number` -> `phone`; `receiver`, `contact_name`, `recipient_account_name` ->
  `person_name`. A date label is kept only if one of its surfaces names a month ("the
  8th" or "tomorrow" alone names no day a reader could check), an amount only if a
  surface has digits. The label's value is its first surface that names a month (dates)
  or starts with "$" (amounts) or writes a clock time ("6:30 pm", "18:30"; times), else
  its first surface.
- every surface is checked to occur verbatim in each event the label cites; a row that
  fails is an error, not a silent drop.

Selection (deterministic): the test split's dialogues in file order, kept when they have
`--min-turns` to `--max-turns` turns and at least `--min-labels` high-value labels (dates
and amounts), then every (kept // count)-th, so services stay mixed.

    .venv/bin/python bench/sgd_transcripts.py --source <checkout or git dir> \
        [--count 40] [--out bench/data/sgd_transcripts.jsonl]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPOSITORY = "google-research-datasets/dstc8-schema-guided-dialogue"
LICENSE = "CC BY-SA 4.0"
HIGH_VALUE = frozenset({"date", "amount"})
_MONTH = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.IGNORECASE)
_CLOCK = re.compile(r"\d\s*[ap]\.?m\b|\d:\d\d", re.IGNORECASE)
_PEOPLE = frozenset({"receiver", "contact_name", "recipient_account_name"})
_AMOUNT_WORDS = ("amount", "price", "fare", "balance", "rent")
RESULT_CHARS = 400  # the tool event's text keeps this much of the first result


def slot_type(slot: str) -> str | None:
    """The entity type of an SGD slot name, or None for slots left unlabelled."""
    if slot in _PEOPLE:
        return "person_name"
    if slot == "phone_number":
        return "phone"
    if "date" in slot:
        return "date"
    if slot.endswith("time") and slot != "wait_time":
        return "time"
    if any(word in slot for word in _AMOUNT_WORDS) and "range" not in slot:
        return "amount"
    return None


def read_json(source: Path, path: str, commit: str) -> Any:
    """A file of the repository: from a checkout, or from a git directory at `commit`."""
    if (source / path).is_file():
        return json.loads((source / path).read_text(encoding="utf-8"))
    shown = subprocess.run(
        ["git", "--git-dir", str(source), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(shown.stdout)


def head_commit(source: Path) -> str:
    """The commit the rows are read from (recorded in each row's `meta`)."""
    git_dir = source if not (source / ".git").exists() else source / ".git"
    shown = subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    )
    return shown.stdout.strip()


def _tool_event(frame: dict[str, Any]) -> dict[str, Any]:
    call = frame["service_call"]
    results = frame.get("service_results") or []
    result = {"results": results[:1], "total_results": len(results)}
    text = f"{call['method']}({json.dumps(call['parameters'])}) -> {json.dumps(result)}"
    if len(text) > RESULT_CHARS:
        text = text[:RESULT_CHARS] + "..."
    return {
        "author": "tool",
        "text": text,
        "tool_call": {"name": call["method"], "args": call["parameters"]},
        "tool_result": result,
    }


def _canonical(frame: dict[str, Any], slot: str, surface: str) -> str:
    for action in frame.get("actions", []):
        if action.get("slot") == slot and surface in action.get("values", []):
            index = action["values"].index(surface)
            canon = action.get("canonical_values") or []
            if index < len(canon):
                return str(canon[index])
    return surface.casefold()


def _choose_value(type_: str, surfaces: list[str]) -> str | None:
    if type_ == "date":
        named = [s for s in surfaces if _MONTH.search(s)]
        return named[0] if named else None
    if type_ == "time":
        clock = [s for s in surfaces if _CLOCK.search(s)]
        return (clock or surfaces)[0]
    if type_ == "amount":
        numeric = [s for s in surfaces if any(c.isdigit() for c in s)]
        dollars = [s for s in numeric if s.startswith("$")]
        return (dollars or numeric)[0] if numeric else None
    return surfaces[0]


def convert(dialogue: dict[str, Any], *, file: str, commit: str) -> dict[str, Any]:
    """One SGD dialogue as a transcripts.jsonl row (events, labels, meta)."""
    events: list[dict[str, Any]] = []
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for turn in dialogue["turns"]:
        text = turn["utterance"]
        for frame in turn["frames"]:
            if "service_call" in frame:
                events.append(_tool_event(frame))
        author = "user" if turn["speaker"] == "USER" else "agent"
        events.append({"author": author, "text": text, "tool_call": None, "tool_result": None})
        event_id = f"e{len(events)}"
        for frame in turn["frames"]:
            for span in frame.get("slots", []):
                type_ = slot_type(span["slot"])
                if type_ is None:
                    continue
                surface = text[span["start"] : span["exclusive_end"]]
                canon = _canonical(frame, span["slot"], surface)
                label = found.setdefault(
                    (type_, canon), {"type": type_, "surfaces": [], "event_ids": []}
                )
                if surface not in label["surfaces"]:
                    label["surfaces"].append(surface)
                if event_id not in label["event_ids"]:
                    label["event_ids"].append(event_id)
    for index, event in enumerate(events, start=1):
        event["id"] = f"e{index}"
    labels = []
    for label in found.values():
        value = _choose_value(label["type"], label["surfaces"])
        if value is not None:
            labels.append({"type": label["type"], "value": value, **_rest(label)})
    row = {
        "id": f"sgd-{dialogue['dialogue_id']}",
        "source": "sgd",
        "flow": "+".join(dialogue["services"]),
        "events": [{"id": e.pop("id"), **e} for e in events],
        "expected_entities": labels,
        "meta": {
            "dataset": REPOSITORY,
            "license": LICENSE,
            "license_file": "LICENSE-SGD-CC-BY-SA-4.0.txt",
            "commit": commit,
            "file": file,
            "dialogue_id": dialogue["dialogue_id"],
            "provenance": "machine-generated dialogue outlines paraphrased by crowd workers",
        },
    }
    check(row)
    return row


def _rest(label: dict[str, Any]) -> dict[str, Any]:
    return {"surfaces": label["surfaces"], "event_ids": label["event_ids"], "sensitive": False}


def check(row: dict[str, Any]) -> None:
    """Every label's value and surfaces occur verbatim in every event it cites."""
    texts = {e["id"]: e["text"] for e in row["events"]}
    for label in row["expected_entities"]:
        if label["value"] not in label["surfaces"]:
            raise ValueError(f"{row['id']}: value {label['value']!r} is not a surface")
        for event_id in label["event_ids"]:
            if not any(s in texts[event_id] for s in label["surfaces"]):
                raise ValueError(f"{row['id']}: no surface of {label['value']!r} in {event_id}")


def high_value(row: dict[str, Any]) -> int:
    """The row's labels the summary evaluation scores (dates and amounts here)."""
    return sum(1 for label in row["expected_entities"] if label["type"] in HIGH_VALUE)


def dialogues(source: Path, commit: str, split: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file, dialogue) for every dialogue of the split, in file order."""
    number = 1
    misses = 0
    while misses < 10:  # the split's files are numbered with gaps
        path = f"{split}/dialogues_{number:03d}.json"
        number += 1
        try:
            loaded = read_json(source, path, commit)
        except (subprocess.CalledProcessError, FileNotFoundError):
            misses += 1
            continue
        misses = 0
        for dialogue in loaded:
            yield path, dialogue


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--min-turns", type=int, default=12)
    parser.add_argument("--max-turns", type=int, default=30)
    parser.add_argument("--min-labels", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/data/sgd_transcripts.jsonl"))
    args = parser.parse_args()
    commit = head_commit(args.source)
    kept = [
        row
        for file, dialogue in dialogues(args.source, commit, args.split)
        if args.min_turns <= len(dialogue["turns"]) <= args.max_turns
        and high_value(row := convert(dialogue, file=file, commit=commit)) >= args.min_labels
    ]
    step = max(len(kept) // args.count, 1)
    chosen = kept[::step][: args.count]
    with args.out.open("w", encoding="utf-8") as handle:
        for row in chosen:
            handle.write(json.dumps(row) + "\n")
    labels = sum(high_value(row) for row in chosen)
    print(f"{len(chosen)} of {len(kept)} eligible dialogues, {labels} high-value labels")


if __name__ == "__main__":
    main()
