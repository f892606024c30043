"""Which retrieved sections can answer a question: the best must hold half of its words
(the customer's own numbers aside), and each kept holds two of them and a third."""

from __future__ import annotations

from agents.knowledge.relevance import relevant
from agents.knowledge.search import KnowledgeHit
from agents.words import query_terms, without_currency
from storage import Database


def _hit(n: int, heading: str, text: str) -> KnowledgeHit:
    return KnowledgeHit(f"doc#s{n}", "doc", "general", "Billing FAQ", heading, None, text, 1.0)


DUPLICATE = _hit(
    1, "I was charged twice", "A second charge for the same invoice is a duplicate; refund it."
)
FAILED = _hit(2, "My payment failed", "A failed payment is retried after 3 days.")
PLANS = _hit(3, "Changing plans", "An upgrade is charged pro rata; refunds follow the policy.")
ACCESS = _hit(
    4,
    "Error 0x80070005 (access denied) on Windows",
    "The desktop app could not write to its folder. Run it as administrator once.",
)


def test_relevant_sections_answer_a_covered_question_despite_the_customers_numbers() -> None:
    question = "I was charged twice for invoice INV-2291, 49.00 USD each. Refund the duplicate?"
    assert relevant([DUPLICATE, PLANS, FAILED], question) == [DUPLICATE]


def test_nothing_is_relevant_when_the_best_section_holds_under_half_the_words() -> None:
    question = "Are there tax benefits from the IRS for my education costs if I pay twice?"
    assert relevant([DUPLICATE, PLANS], question) == []


def test_a_short_question_needs_all_its_words() -> None:
    assert relevant([FAILED, PLANS], "payment failed") == [FAILED]
    assert relevant([PLANS, FAILED], "payment failed") == []


def test_the_error_code_the_best_section_documents_makes_it_relevant() -> None:
    # Under half of the question's other words are in the section: the code decides.
    question = "The desktop app crashes with error 0x80070005 every time I open the settings page."
    assert relevant([ACCESS, PLANS], question) == [ACCESS]
    assert relevant([PLANS], question) == []


def test_the_currency_of_the_customers_amount_is_no_topic_word() -> None:
    assert without_currency("49.00 USD each, or USD 49, or 12 euros") == (
        "49.00  each, or  49, or 12 "
    )
    # A currency named on its own is a word like any other.
    assert without_currency("Can I pay in USD?") == "Can I pay in USD?"
    assert "usd" not in query_terms("I paid 49.00 USD twice")


async def test_policy_sections_alone_answer_a_duplicate_charge_with_its_amount(
    db: Database,
) -> None:
    """`policy_checker` searches the policies alone. "USD", beside the customer's
    amount, ranked "Who may approve a refund" (three amounts in USD) above "Duplicate
    charges", and that section held too few of the question's words: nothing was
    relevant, and the consulted checker answered that it found nothing."""
    question = (
        "I was charged twice for my March invoice INV-2291, 49.00 USD each time. Can I get "
        "a refund of the duplicate?"
    )
    hits = await db.knowledge.search(question, collections=["policies"], limit=5)
    assert hits[0].id == "policies/refund-policy#duplicate-charges"
    assert [h.id for h in relevant(hits, question)] == [hits[0].id]
