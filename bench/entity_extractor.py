"""Entity extractor quality and transcript size on the evaluation set.

Runs `agents.summary.entities.EntityExtractor` over every conversation of
transcripts.jsonl and prints precision and recall against `expected_entities`, per type
and overall, plus the grouped targets (ids, amounts, emails, dates: recall >= 0.95,
precision >= 0.90). It also checks sensitive values are flagged, and prints the rendered
transcript's size in tokens (median, p95) before and after truncation. Tokens are counted
with the 4-characters-a-token approximation (`agents.summary.transcript.approx_tokens`);
pass --litellm to count the rendered text with litellm's tokenizer instead (slow).

    .venv/bin/python bench/entity_extractor.py [--data PATH] [--litellm]
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections import Counter
from pathlib import Path

from agents.summary.entities import ID_TYPES, EntityExtractor, normalize
from agents.summary.transcript import RenderOptions, approx_tokens, render_transcript
from bot.evals.dataset import load_conversations, numbered

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts.jsonl"
UNLIMITED = RenderOptions(
    max_tool_chars=10**9, max_text_chars=10**9, max_array_items=10**9, token_budget=10**9
)
GROUPS = {"ids": ID_TYPES, "amounts": {"amount"}, "emails": {"email"}, "dates": {"date"}}


def _group(type_: str) -> str:
    return "ids" if type_ in ID_TYPES else type_


def _target(group: str) -> str | None:
    for name, types in GROUPS.items():
        if (group == "ids" and name == "ids") or group in types:
            return name
    return None


def _pct(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--litellm", action="store_true", help="count tokens with litellm")
    args = parser.parse_args()

    extractor = EntityExtractor()
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    sensitive_expected = sensitive_flagged = 0
    before: list[int] = []
    after: list[int] = []
    missed_examples: dict[str, list[str]] = {}
    extra_examples: dict[str, list[str]] = {}
    counter = None
    if args.litellm:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        counter = litellm.token_counter
    conversations = list(load_conversations(args.data))
    for conv in conversations:
        events = numbered(conv.events)
        found = extractor.extract(events)
        got = {(_group(e.type), normalize(e.type, e.value)) for e in found}
        want = {(_group(e.type), normalize(e.type, e.value)) for e in conv.expected}
        for key in got & want:
            tp[key[0]] += 1
        for key in got - want:
            fp[key[0]] += 1
            extra_examples.setdefault(key[0], []).append(key[1])
        for key in want - got:
            fn[key[0]] += 1
            missed_examples.setdefault(key[0], []).append(key[1])
        flagged = {normalize("", e.value) for e in found if e.sensitive}
        for e in conv.expected:
            if e.sensitive:
                sensitive_expected += 1
                sensitive_flagged += normalize("", e.value) in flagged
        full = render_transcript(events, UNLIMITED).text
        cut = render_transcript(events, RenderOptions()).text
        for sizes, text in ((before, full), (after, cut)):
            sizes.append(
                counter(model="gpt-4o-mini", text=text) if counter else approx_tokens(text)
            )

    print(f"conversations: {len(conversations)}")
    print(f"{'type':16} {'expected':>8} {'found':>6} {'recall':>7} {'precision':>9}")
    types = sorted(set(tp) | set(fp) | set(fn))
    for type_ in [*types, "ALL"]:
        t = sum(tp.values()) if type_ == "ALL" else tp[type_]
        f_p = sum(fp.values()) if type_ == "ALL" else fp[type_]
        f_n = sum(fn.values()) if type_ == "ALL" else fn[type_]
        recall = t / (t + f_n) if t + f_n else float("nan")
        precision = t / (t + f_p) if t + f_p else float("nan")
        print(f"{type_:16} {t + f_n:8} {t + f_p:6} {recall:7.3f} {precision:9.3f}")
    print("targets (recall >= 0.95, precision >= 0.90):")
    for name in GROUPS:
        members = [g for g in types if _target(g) == name]
        t = sum(tp[g] for g in members)
        f_p = sum(fp[g] for g in members)
        f_n = sum(fn[g] for g in members)
        recall = t / (t + f_n) if t + f_n else 1.0
        precision = t / (t + f_p) if t + f_p else 1.0
        ok = "ok" if recall >= 0.95 and precision >= 0.90 else "BELOW TARGET"
        print(f"  {name:8} recall {recall:.3f} precision {precision:.3f} {ok}")
    print(f"sensitive values flagged: {sensitive_flagged}/{sensitive_expected}")
    how = "litellm token_counter (gpt-4o-mini)" if counter else "approx 4 chars/token"
    print(f"rendered transcript tokens ({how}; defaults {RenderOptions()}):")
    print(f"  before truncation: median {statistics.median(before):.0f}  p95 {_pct(before, 0.95)}")
    print(f"  after truncation:  median {statistics.median(after):.0f}  p95 {_pct(after, 0.95)}")
    if os.environ.get("BENCH_VERBOSE"):
        for name, values in missed_examples.items():
            print("missed", name, values[:15])
        for name, values in extra_examples.items():
            print("extra", name, values[:15])


if __name__ == "__main__":
    main()
