"""Windows and model calls per summary mode, counted without a model.

Replays each conversation of transcripts.jsonl (the `make eval-local` selection:
`--limit 40`, every fifth) one invocation at a time, as the window hook sees it live, and
then makes its digest, with the shipped planning code (`IncrementalSummarizer.plan` and
`summarised_now`). Nothing is summarised: every summarised window is taken to pass on its
first attempt, so the figures count draft calls (retries and completion calls come on top
in every mode). Three modes side by side:

- `whole`: one summary of the whole thread at idle;
- `incremental (before)`: a window every `--interval` invocations, the tail at idle
  (the cut before windows waited for a value);
- `incremental`: a window closes once it holds a value the validator asks for (bounded
  at `WINDOW_BOUND` times the interval); an open tail without values is left at idle.

Printed per mode: windows, model-summarised windows (draft calls) and how many of them
hold no value (by the validator's extractors, `agents.summary.demands`), threads with a
call at idle, the transcript tokens sent (4 characters a token, the instruction left
out: a local server caches it), and the most values one window's record is asked for
(a window that fails costs them all) with the windows asked for 10 or more. tau-bench
airline threads are also shown on their own.

    .venv/bin/python bench/window_count.py [--data PATH] [--limit 40] [--interval 3]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agents.events import Event
from agents.summary.checks.coverage import find_promises
from agents.summary.demands import holds_values
from agents.summary.entities import EntityExtractor
from agents.summary.incremental import IncrementalSummarizer, summarised_now
from agents.summary.service import SummaryService
from agents.summary.transcript import RenderOptions, render_transcript
from agents.summary.windows import (
    InMemoryWindowStore,
    StoredWindow,
    WindowSpan,
    invocations,
    plan_windows,
)
from bot.evals.dataset import LabelledConversation, load_conversations
from bot.evals.summaries import select_every_nth

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts.jsonl"
MODES = ("whole", "incremental (before)", "incremental")


@dataclass
class Thread:
    """One conversation under one mode."""

    windows: int = 0
    calls: int = 0
    valueless_calls: int = 0
    valueless_idle_calls: int = 0
    idle_calls: int = 0
    tokens: int = 0
    idle_tokens: int = 0
    most_values: int = 0
    windows_over_ten: int = 0


@dataclass
class Column:
    mode: str
    threads: list[Thread] = field(default_factory=list)

    def rows(self) -> dict[str, str]:
        n = len(self.threads) or 1

        def total(name: str) -> int:
            return sum(getattr(t, name) for t in self.threads)

        def median(name: str) -> float:
            values = [getattr(t, name) for t in self.threads]
            return statistics.median(values) if values else 0.0

        return {
            "threads": str(len(self.threads)),
            "windows": f"{total('windows')} (median {median('windows'):g})",
            "model-summarised windows (draft calls)": (
                f"{total('calls')} ({total('calls') / n:.2f}/thread)"
            ),
            "  of them holding no value": str(total("valueless_calls")),
            "    of those at idle (a thread's only window)": str(total("valueless_idle_calls")),
            "threads with a call at idle": str(sum(1 for t in self.threads if t.idle_calls)),
            "transcript tokens sent per thread (median)": f"{median('tokens'):g}",
            "transcript tokens sent, all threads": str(total("tokens")),
            "transcript tokens at idle (median)": f"{median('idle_tokens'):g}",
            "values one window demands, most": str(max(t.most_values for t in self.threads)),
            "windows demanding 10 values or more": str(total("windows_over_ten")),
        }


def numbered(conversation: LabelledConversation) -> list[Event]:
    """The events as a session holds them: ids, seqs and one invocation id per turn."""
    events = [
        e.model_copy(update={"id": f"e{i}", "seq": i})
        for i, e in enumerate(conversation.events, start=1)
    ]
    return [
        e.model_copy(update={"invocation_id": f"inv-{n}"})
        for n, group in enumerate(invocations(events), start=1)
        for e in group
    ]


def _tokens(events: Sequence[Event], span: WindowSpan, extractor: EntityExtractor) -> int:
    return render_transcript(
        _inside(events, span), RenderOptions(), mask=extractor.extract(_inside(events, span))
    ).tokens


def _inside(events: Sequence[Event], span: WindowSpan) -> list[Event]:
    return [e for e in events if span.start_seq <= e.seq <= span.end_seq]


def replay(
    events: list[Event], summarizer: IncrementalSummarizer, *, values: bool, interval: int
) -> Thread:
    """Live windows after each invocation, then the digest, counting what is summarised."""
    extractor = summarizer.service.extractor

    def plan(upto: str | None, stored: list[StoredWindow]) -> list[WindowSpan]:
        if values:
            return summarizer.plan(events, stored, completed_through=upto).todo
        return plan_windows(events, stored, interval=interval, completed_through=upto).todo

    thread = Thread()
    stored: list[StoredWindow] = []

    def summarise(span: WindowSpan, *, idle: bool) -> None:
        stored.append(StoredWindow(span=span, status="passed", record={"goal": "g"}))
        tokens = _tokens(events, span, extractor)
        thread.calls += 1
        valueless = not holds_values(_inside(events, span), extractor)
        thread.valueless_calls += int(valueless)
        demanded = demands(_inside(events, span), extractor)
        thread.most_values = max(thread.most_values, demanded)
        thread.windows_over_ten += int(demanded >= 10)
        thread.tokens += tokens
        if idle:
            thread.idle_calls += 1
            thread.idle_tokens += tokens
            thread.valueless_idle_calls += int(valueless)

    for invocation in dict.fromkeys(e.invocation_id for e in events):
        for span in plan(invocation, stored):
            if span.closed:
                summarise(span, idle=False)
    for span in plan(None, stored):
        if not values or summarised_now(span, stored):
            summarise(span, idle=True)
    thread.windows = len(stored)
    return thread


def demands(events: Sequence[Event], extractor: EntityExtractor) -> int:
    """How many values and promises a record of `events` is asked for (as `crowded`
    counts them)."""
    found = {
        (e.type, e.value) for e in extractor.extract(events) if e.high_value and not e.sensitive
    }
    return len(found) + len(find_promises(list(events)))


def whole(events: list[Event], extractor: EntityExtractor) -> Thread:
    rendered = render_transcript(events, RenderOptions(), mask=extractor.extract(events))
    valueless = int(not holds_values(events, extractor))
    demanded = demands(events, extractor)
    return Thread(
        most_values=demanded,
        windows_over_ten=int(demanded >= 10),
        valueless_calls=valueless,
        valueless_idle_calls=valueless,
        windows=1,
        calls=1,
        idle_calls=1,
        tokens=rendered.tokens,
        idle_tokens=rendered.tokens,
    )


def table(columns: Sequence[Column], title: str) -> list[str]:
    rows = [c.rows() for c in columns]
    names = list(rows[0])
    width = max(len(n) for n in names) + 2
    lines = [title.ljust(width) + "".join(c.mode.rjust(24) for c in columns)]
    lines += [n.ljust(width) + "".join(r[n].rjust(24) for r in rows) for n in names]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--interval", type=int, default=3, help="COMPACTION_INTERVAL")
    args = parser.parse_args()
    conversations = select_every_nth(list(load_conversations(args.data)), args.limit)
    service = SummaryService("offline")  # never called: its extractor and nothing else
    summarizer = IncrementalSummarizer(service, InMemoryWindowStore(), interval=args.interval)
    groups: dict[str, list[Column]] = {
        "all": [Column(m) for m in MODES],
        "tau-airline": [Column(m) for m in MODES],
    }
    for conversation in conversations:
        events = numbered(conversation)
        threads = (
            whole(events, service.extractor),
            replay(events, summarizer, values=False, interval=args.interval),
            replay(events, summarizer, values=True, interval=args.interval),
        )
        keys = ["all"] + (["tau-airline"] if conversation.id.startswith("tau-airline") else [])
        for key in keys:
            for column, thread in zip(groups[key], threads, strict=True):
                column.threads.append(thread)
    print(
        f"{len(conversations)} conversations of {args.data}, windows of {args.interval} invocations"
    )
    for key, columns in groups.items():
        if columns[0].threads:
            print("\n".join(table(columns, key)))


if __name__ == "__main__":
    main()
