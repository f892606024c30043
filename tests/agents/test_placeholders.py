"""A template placeholder never reaches the customer.

The embedded model, asked what to do when a reset e-mail never arrives, told the customer
to write to "[support email address]". A bracketed stand-in for a detail the model does
not have is caught like a pretend action: asked for again once with the placeholder
named, then cut out with its sentence.
"""

from __future__ import annotations

import pytest

from agents.llm.decide_first.pretend_actions import PretendAction, find_pretend_action
from agents.models.scripted import ScriptedModel
from tests.agents.conversation import Conversation
from tests.agents.test_decision import choose, support_tree


@pytest.mark.parametrize(
    ("text", "blank"),
    [
        ("Email us at [support email address] and we will help.", "[support email address]"),
        ("Best regards,\n[Your Name]", "[Your Name]"),
        ("Download it from [insert link here].", "[insert link here]"),
        ("Your order [Order ID] is on its way.", "[Order ID]"),
    ],
)
def test_a_bracketed_stand_in_for_a_detail_is_a_placeholder(text: str, blank: str) -> None:
    assert find_pretend_action(text, targets=[], tools=[]) == PretendAction("placeholder", blank)


@pytest.mark.parametrize(
    "text",
    [
        "Press [Save], then open [Settings] > [Security].",
        "The guide says so [1].",
        "Read [the refund policy](https://help.example.com/policies/refunds) for the details.",
        "- [x] Restart the app\n- [ ] Sign in again",
        "Choose [Forgot password] on the sign-in page.",
    ],
)
def test_labels_citations_links_and_checkboxes_are_not_placeholders(text: str) -> None:
    assert find_pretend_action(text, targets=[], tools=[]) is None


async def test_a_placeholder_is_asked_again_with_it_named() -> None:
    model = ScriptedModel(
        [
            choose("support_supervisor"),
            "Write to us at [support email address] and we will reply within a day.",
            "Write to us from the help page and we will reply within a day.",
            choose("support_supervisor"),  # the review: send it
        ],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send("How do I reach you?")
    assert turn == [
        ("support_supervisor", "Write to us from the help page and we will reply within a day.")
    ]
    note = model.requests[2].contents[-1].text
    assert "[support email address] is a placeholder" in note
    assert note.startswith("(A note for you, not from the customer")
    model.assert_complete()


async def test_a_placeholder_written_again_is_cut_out_with_its_sentence() -> None:
    again = "Thanks for asking.\n\nWrite to [support email address] for help."
    model = ScriptedModel(
        [choose("support_supervisor"), again, again, choose("support_supervisor")],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send("How do I reach you?")
    assert turn == [("support_supervisor", "Thanks for asking.")]
    model.assert_complete()
