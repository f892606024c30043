"""Scoring answers: token F1, key facts in words or digits, values no section states,
the fixed look/measure split and the report's stable labels."""

from __future__ import annotations

from pathlib import Path

from bot.evals.answers import (
    NOT_FOUND,
    AnswerCase,
    AnswerResult,
    load_answer_cases,
    report_lines,
    states_fact,
    token_f1,
    unsupported_values,
)
from bot.evals.retrieval import split_half

FIXTURE = Path(__file__).parents[2] / "fixtures" / "knowledge_eval"
SECTION = "A duplicate charge is refunded in full within 5 business days (INV-2291, 2.5%)."


def test_answers_token_f1_ignores_case_punctuation_and_articles() -> None:
    assert token_f1("The fee is five dollars.", "fee is 5 dollars") == 1.0
    assert token_f1("no overlap here", "something else") == 0.0
    assert 0.0 < token_f1("Run the installer as admin", "Run the installer again") < 1.0


def test_answers_key_fact_matches_in_words_or_digits_and_in_order() -> None:
    assert states_fact("It is refunded within five business days.", "5 business days")
    assert states_fact("within 30 days", "thirty days") is False
    assert not states_fact("business days: 5", "5 business days")


def test_answers_values_must_be_in_a_section_or_the_question() -> None:
    question = "Was INV-7 charged twice?"
    assert unsupported_values("Refunded within 5 business days.", question, [SECTION]) == ()
    assert unsupported_values("Refunded within five business days.", question, [SECTION]) == ()
    assert unsupported_values("About INV-7: 2.5% back.", question, [SECTION]) == ()
    found = unsupported_values("You get $98.00 back in 10 days, code 0x80070005.", question, [])
    assert found == ("0x80070005", "$98.00", "10")
    spelled = unsupported_values("It takes 2 weeks.", "", ["It takes two weeks."])
    assert spelled == ()
    listed = unsupported_values("1. Open the app.\n2) Pay 7 USD.", "", [])
    assert listed == ("7 USD",)


def test_answers_split_is_fixed_and_has_both_halves() -> None:
    cases = load_answer_cases(FIXTURE / "questions.jsonl")
    assert [c.half for c in cases] == [split_half(c.id) for c in cases]
    halves = {split_half(f"q{n}") for n in range(20)}
    assert halves == {"look", "measure"}


def test_answers_report_prints_every_label_per_source_and_overall() -> None:
    cases = load_answer_cases(FIXTURE / "questions.jsonl")
    assert [c.source for c in cases] == ["billing", "billing", "tech", "billing"]
    assert [c.answerable for c in cases] == [True, True, True, False]

    def result(case: AnswerCase, reply: str, **extra: object) -> AnswerResult:
        values: dict[str, object] = {
            "doc_rank": 1,
            "section_rank": 2,
            "knowledge_check": "supported",
            "seconds": 2.0,
            "model_calls": 3,
            "prompt_tokens": 1000,
            "completion_tokens": 50,
            **extra,
        }
        return AnswerResult(case=case, reply=reply, **values)  # type: ignore[arg-type]

    results = [
        result(cases[0], "Refunded within five business days."),
        result(
            cases[1],
            "Yes, within 14 days.",
            doc_rank=2,
            section_rank=None,
            seconds=4.0,
            unsupported=("14",),
        ),
        result(cases[2], "Run the installer as an administrator.", section_rank=1),
        result(
            cases[3],
            "I couldn't find that in our documentation.",
            doc_rank=None,
            section_rank=None,
            knowledge_check=NOT_FOUND,
            seconds=1.0,
        ),
    ]
    lines = report_lines(results)
    overall = {
        line.split("] ", 1)[1].split(": ")[0]: line.split(": ", 1)[1]
        for line in lines
        if line.startswith("[overall]")
    }
    assert overall == {
        "questions": "4",
        "document hit@1": "0.667 (2/3)",
        "document hit@5": "1.000 (3/3)",
        "section hit@5": "0.667 (2/3)",
        "key-fact recall": "0.500 (1/2)",
        "token F1": overall["token F1"],
        "unsupported values": "1 (of 4 answers)",
        "honest on unanswerable": "1.000 (1/1)",
        "seconds per answer (median)": "2.00",
        "model calls per answer (median)": "3",
        "prompt tokens per answer (median)": "1000",
        "completion tokens per answer (median)": "50",
    }
    assert 0.0 < float(overall["token F1"]) < 1.0
    assert "[tech] honest on unanswerable: n/a" in lines
    assert "[billing] key-fact recall: 0.500 (1/2)" in lines
    assert [line.split("]")[0] for line in lines[::12]] == ["[billing", "[tech", "[overall"]
