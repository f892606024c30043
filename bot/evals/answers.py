"""Answer evaluation, scoring half: the questions, and what each answer is judged by.

A question set is a `questions.jsonl` file (fields `id`, `question`, `doc_id`, `section`,
`reference_answer`, `key_facts`, `answerable`, `meta`; see
`../shared/data/knowledge_dev/README.md`). Each answer is scored on:

- where the knowledge search ranks the question's document and section;
- key-fact recall (a number in words and in digits is the same fact) and token F1 against
  the reference answer (answerable questions);
- values (amounts, dates, percentages, codes, numbers) found in no section the answer was
  given and not in the question: an answer holding one is unsupported;
- honesty on questions the documents do not cover: the reply's `knowledge_check` is
  `"not_found"` and it states no unsupported value;
- its cost: seconds, and the model calls and tokens of the invocation (load-independent,
  so comparable on a shared machine; an agent consulted as a tool is not counted).

`report_lines` prints the figures per source (the question's `meta.domain`) and overall,
one `[group] label: value` line each, so scripts can read them.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agents.summary.entities import DEFAULT_PATTERNS, EntityExtractor, as_entity, mentions, pattern
from bot.evals.retrieval import Half, split_half

NOT_FOUND = "not_found"
"""The reply's `knowledge_check` when it says the documents do not cover the question."""

# The digest's value patterns, plus what a documentation answer states: percentages,
# error and form codes, and any other number ("10 years", "45 days").
VALUE_PATTERNS = (
    pattern("percentage", r"\b\d+(?:\.\d+)?\s?(?:%|percent\b)"),
    pattern("code", r"\b0x[0-9A-Fa-f]{4,}\b"),
    pattern("code", r"\b[A-Z]{1,4}-?\d+[A-Z0-9-]*\b"),
    *DEFAULT_PATTERNS,
    pattern("number", r"(?<![\w.,])\d+(?:[.,]\d+)*(?![\w])"),
)
_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()
_DIGITS = {word: str(n) for n, word in enumerate(_NUMBER_WORDS)}
_TOKEN = re.compile(r"[a-z0-9]+")
_ARTICLES = frozenset({"a", "an", "the"})
# A numbered list item's number ("2. Open the app") states nothing.
_LIST_MARKER = re.compile(r"^[ \t>*-]*\d+[.)](?=\s)", re.MULTILINE)


@dataclass(frozen=True)
class AnswerCase:
    """One question, where its answer is (None when the documents do not cover it), and
    what a good answer says."""

    id: str
    question: str
    doc_id: str | None
    section: str | None
    reference_answer: str
    key_facts: tuple[str, ...]
    answerable: bool
    source: str

    @property
    def half(self) -> Half:
        """The fixed half of the seeded split (`bot.evals.retrieval.split_half`)."""
        return split_half(self.id)


@dataclass(frozen=True)
class AnswerResult:
    """One question's answer and its scores."""

    case: AnswerCase
    doc_rank: int | None
    section_rank: int | None
    reply: str
    knowledge_check: str | None
    seconds: float
    unsupported: tuple[str, ...] = field(default=())
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def honest(self) -> bool:
        """Said the documents do not cover it, and stated no unsupported value."""
        return self.knowledge_check == NOT_FOUND and not self.unsupported


def load_answer_cases(path: Path) -> list[AnswerCase]:
    """Every question of a questions JSONL file, answerable or not."""
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        meta = row.get("meta") or {}
        cases.append(
            AnswerCase(
                id=row["id"],
                question=row["question"],
                doc_id=row.get("doc_id"),
                section=row.get("section"),
                reference_answer=row.get("reference_answer") or "",
                key_facts=tuple(row.get("key_facts") or ()),
                answerable=bool(row.get("answerable")) and bool(row.get("doc_id")),
                source=str(meta.get("domain") or meta.get("dataset") or "all"),
            )
        )
    return cases


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, number words as digits, articles dropped."""
    found = (_DIGITS.get(t, t) for t in _TOKEN.findall(text.lower()))
    return [t for t in found if t not in _ARTICLES]


def token_f1(answer: str, reference: str) -> float:
    """SQuAD-style token F1 of `answer` against `reference`."""
    a, r = Counter(tokens(answer)), Counter(tokens(reference))
    common = sum((a & r).values())
    if not common:
        return 0.0
    precision, recall = common / sum(a.values()), common / sum(r.values())
    return 2 * precision * recall / (precision + recall)


def states_fact(answer: str, fact: str) -> bool:
    """Whether `answer` holds `fact`'s words in order ("two months" is "2 months")."""
    want, have = tokens(fact), tokens(answer)
    if not want:
        return True
    return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))


def unsupported_values(answer: str, question: str, sources: Sequence[str]) -> tuple[str, ...]:
    """The values of `answer` that neither the question nor any of `sources` states (a
    list item's number is none)."""
    extractor = EntityExtractor(VALUE_PATTERNS)
    answer = _LIST_MARKER.sub("", answer)
    spelled = [_digits_for_words(text) for text in (question, *sources)]
    missing: dict[str, None] = {}
    for type_, value, _high, _sensitive in extractor.from_text(answer):
        entity = as_entity(value) if type_ != "amount" else as_entity("$" + value.strip("$€£ "))
        if not any(mentions(text, entity) for text in (question, *sources, *spelled)):
            missing.setdefault(value, None)
    return tuple(missing)


def _digits_for_words(text: str) -> str:
    """`text` with number words as digits, so "two years" supports "2 years"."""
    return re.sub(
        r"\b(" + "|".join(_NUMBER_WORDS) + r")\b",
        lambda m: _DIGITS[m.group(1).lower()],
        text,
        flags=re.IGNORECASE,
    )


def share(hits: int, total: int) -> str:
    """`hits` of `total` as a figure's value: "0.750 (3/4)", or "n/a" of nothing."""
    return f"{hits / total:.3f} ({hits}/{total})" if total else "n/a"


def figures(results: Sequence[AnswerResult]) -> dict[str, str]:
    """The report's figures over `results`, each formatted for its line."""
    answerable = [r for r in results if r.case.answerable]
    uncovered = [r for r in results if not r.case.answerable]
    with_section = [r for r in answerable if r.case.section]
    facts = [(r, fact) for r in answerable for fact in r.case.key_facts]

    def ranked(ranks: list[int | None], k: int, total: int) -> str:
        return share(sum(1 for rank in ranks if rank is not None and rank <= k), total)

    doc_ranks = [r.doc_rank for r in answerable]
    seconds = [r.seconds for r in results]
    f1 = [token_f1(r.reply, r.case.reference_answer) for r in answerable]
    unsupported = sum(1 for r in results if r.unsupported)
    return {
        "document hit@1": ranked(doc_ranks, 1, len(answerable)),
        "document hit@5": ranked(doc_ranks, 5, len(answerable)),
        "section hit@5": ranked([r.section_rank for r in with_section], 5, len(with_section)),
        "key-fact recall": share(sum(states_fact(r.reply, f) for r, f in facts), len(facts)),
        "token F1": f"{statistics.fmean(f1):.3f}" if f1 else "n/a",
        "unsupported values": f"{unsupported} (of {len(results)} answers)",
        "honest on unanswerable": share(sum(r.honest for r in uncovered), len(uncovered)),
        "seconds per answer (median)": f"{statistics.median(seconds):.2f}" if seconds else "n/a",
        "model calls per answer (median)": _median([r.model_calls for r in results]),
        "prompt tokens per answer (median)": _median([r.prompt_tokens for r in results]),
        "completion tokens per answer (median)": _median([r.completion_tokens for r in results]),
    }


def _median(counts: list[int]) -> str:
    return f"{statistics.median(counts):g}" if counts else "n/a"


def report_lines(results: Sequence[AnswerResult]) -> list[str]:
    """The figures per source and overall, one `[group] label: value` line each."""
    groups = sorted({r.case.source for r in results})
    lines = []
    for name in (*groups, "overall"):
        part = [r for r in results if name == "overall" or r.case.source == name]
        lines.append(f"[{name}] questions: {len(part)}")
        lines.extend(f"[{name}] {label}: {value}" for label, value in figures(part).items())
    return lines


def case_line(result: AnswerResult) -> str:
    """One answer's line: its ranks, check, unsupported values and the reply's start."""
    case = result.case
    ranks = f"doc@{result.doc_rank or '-'} section@{result.section_rank or '-'}"
    if not case.answerable:
        ranks = "unanswerable"
    extra = f" unsupported={list(result.unsupported)}" if result.unsupported else ""
    reply = " ".join(result.reply.split())[:100]
    return (
        f"{case.id} [{case.source}] {ranks} check={result.knowledge_check or '-'}{extra} "
        f"{result.seconds:.1f}s {result.model_calls} calls "
        f"{result.prompt_tokens}+{result.completion_tokens} tokens: {reply}"
    )
