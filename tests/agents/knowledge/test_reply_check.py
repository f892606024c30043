"""The values a grounded reply is checked for, and how a failing reply is stripped."""

from __future__ import annotations

import pytest

from agents.knowledge.reply_check import (
    asks_only,
    documented_codes,
    says_not_found,
    stripped,
    unsupported,
)
from agents.knowledge.values import Value, states, values

SECTION = (
    "The refund goes back to the original payment method within 5 to 10 business days. "
    "Refunds over 500.00 USD need the finance team's approval (form FIN-7). Error "
    "0x80070005 means access denied; HTTP 429 means too many requests. A 10% fee applies. "
    "CERTIFICATE_VERIFY_FAILED means the clock is wrong. See the Refund policy."
)


@pytest.mark.parametrize(
    ("reply", "kind", "text"),
    [
        ("You get $49 back.", "amount", "$49"),
        ("That is 49.00 USD.", "amount", "49.00 USD"),
        ("It takes 14 days.", "deadline", "14 days"),
        ("Allow 5-10 business days.", "deadline", "5-10 business days"),
        ("A 15% discount.", "percentage", "15%"),
        ("Error 0x80070057 again.", "code", "0x80070057"),
        ("It said HTTP 401.", "code", "HTTP 401"),
        ("Fill in form W-9.", "name", "form W-9"),
        ("Under our Fair Use policy you may not.", "name", "Fair Use policy"),
        ("Bring 2 proofs of identity.", "number", "2"),
        ("You must be 16 or older.", "number", "16"),
    ],
)
def test_values_are_found_by_kind(reply: str, kind: str, text: str) -> None:
    assert Value(kind, text) in values(reply)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reply", "supported"),
    [
        ("The refund arrives within 10 business days.", True),
        ("You will get 500 USD back.", True),
        ("Send form FIN-7.", True),
        ("Error 0x80070005 is access denied.", True),
        ("That is HTTP 429.", True),
        ("A 10 percent fee applies.", True),
        ("It shows CERTIFICATE_VERIFY_FAILED.", True),
        ("Our Refund policy says so.", True),
        ("Up to 10 people may apply.", True),
        ("The refund arrives within 3 business days.", False),
        ("You will get 98.00 USD back.", False),
        ("Send form FIN-9.", False),
        ("A 20% fee applies.", False),
        ("Our Privacy policy says so.", False),
        ("That is HTTP 401.", False),
        ("Up to 12 people may apply.", False),
    ],
)
def test_values_are_supported_only_when_a_source_states_them(reply: str, supported: bool) -> None:
    assert (not unsupported(reply, [SECTION])) is supported
    assert all(states(SECTION, v) is supported for v in values(reply))


def test_list_markers_and_numbers_inside_other_values_are_not_values_of_their_own() -> None:
    reply = "1. Open Settings.\n2) Pay the 49.00 USD invoice INV-2291 within 14 days."
    assert values(reply) == [
        Value("amount", "49.00 USD"),
        Value("code", "INV-2291"),
        Value("deadline", "14 days"),
    ]


def test_stripped_reply_keeps_only_the_sentences_with_supported_values() -> None:
    reply = (
        "The duplicate charge of 49.00 USD is refunded in full. It reaches you within 3 "
        "business days. Your card gets the money back."
    )
    found = unsupported(reply, [SECTION, "charged 49.00 USD twice"])
    assert [v.text for v in found] == ["3 business days"]
    assert stripped(reply, found) == (
        "The duplicate charge of 49.00 USD is refunded in full. Your card gets the money back."
    )
    assert stripped("It takes 3 business days.", found) == ""


@pytest.mark.parametrize(
    ("reply", "admits"),
    [
        ("I couldn't find that in our documentation.", True),
        ("I could not find any information about tax benefits in the sections.", True),
        ("The documentation does not mention a student discount.", True),
        ("There is no information about lienholders.", True),
        ("The sections provided do not mention a student discount.", True),
        ("The error code 0x80070005 is not listed in the troubleshooting guide.", True),
        ("There is no specific information about a card surcharge.", True),
        ("I'm sorry, but I don't have information on tax refunds.", True),
        ("The documentation doesn't specify how long it takes.", True),
        ("Error 0x80070005 is listed in the troubleshooting guide under access denied.", False),
        ("If the app is not listed in your account, sign in again.", False),
        ("The duplicate charge is refunded in full.", False),
        ("If you cannot find the invoice, check your e-mail.", False),
    ],
)
def test_a_reply_admitting_the_documents_do_not_answer_is_recognised(
    reply: str, admits: bool
) -> None:
    assert says_not_found(reply) is admits


def test_codes_asked_about_that_a_section_states_are_documented() -> None:
    """An error code or a numbered form the customer asked about, stated by a section,
    is evidence the documentation covers the question; words shared with it are not, nor
    a customer's own identifier that no section states."""
    sections = ["## Error 0x80070005 (access denied)", "Refunds over 500 USD need form FIN-7."]
    asked = "The app crashes with error 0x80070005 on invoice INV-2291. Do I need form FIN-7?"
    assert [v.text for v in documented_codes(asked, sections)] == ["0x80070005", "form FIN-7"]
    assert documented_codes("Why does the app crash when I open settings?", sections) == []


@pytest.mark.parametrize(
    ("reply", "only_asks"),
    [
        ("Sure, I can help with that. What is the new delivery address?", True),
        ("I'm sorry to hear that! Could you tell me your order number?", True),
        ("Yes, you can drive with a foreign licence. Do you need anything else?", False),
        ("You can reset it from your profile page.", False),
    ],
)
def test_a_reply_that_only_asks_back_is_recognised(reply: str, only_asks: bool) -> None:
    assert asks_only(reply) is only_asks
