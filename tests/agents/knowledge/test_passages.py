"""The sentences a small model answers from: those of each section sharing most of the
question's words, in the section's order, the best section's first."""

from __future__ import annotations

from agents.knowledge.passages import OTHER_SENTENCES, passages, quoted, sentences
from agents.knowledge.search import KnowledgeHit

BODY = (
    "Our offices open at nine. A duplicate charge is refunded in full. Refunds go back to "
    "the original payment method within 5 to 10 business days. Version 2.5 added dark "
    "mode. Gift cards cannot be refunded. The weather is nice.\n- Call us any time."
)


def _hit(n: int, text: str = BODY) -> KnowledgeHit:
    return KnowledgeHit(f"doc#s{n}", "doc", "general", "Doc", f"S{n}", None, text, 1.0)


def test_sentences_keep_decimals_and_list_items_whole() -> None:
    found = sentences(BODY)
    assert "Version 2.5 added dark mode." in found
    assert found[-1] == "Call us any time."


def test_passages_keep_the_sentences_sharing_most_of_the_question_in_order() -> None:
    [best, other] = passages(
        [_hit(1), _hit(2)], "How long does a refund of a duplicate charge take?"
    )
    assert best.sentences == (
        "A duplicate charge is refunded in full.",
        "Refunds go back to the original payment method within 5 to 10 business days.",
        "Gift cards cannot be refunded.",
    )
    assert other.sentences == best.sentences[:OTHER_SENTENCES]


def test_passages_of_a_section_sharing_no_word_are_its_first_sentences() -> None:
    [only] = passages([_hit(1)], "bitcoin wallet")
    assert only.sentences[0] == "Our offices open at nine."


def test_quoted_adds_the_best_sentences_the_answer_does_not_hold() -> None:
    question = "How long does a refund of a duplicate charge take?"
    answer = "A duplicate charge is refunded in full."
    assert quoted(answer, _hit(1), question) == (
        f"{answer}\n\n> Refunds go back to the original payment method within 5 to 10 "
        "business days. Gift cards cannot be refunded."
    )
    every = (
        f"{answer} Refunds go back to the original payment method within 5 to 10 business "
        "days. Gift cards cannot be refunded."
    )
    assert quoted(every, _hit(1), question) == every
