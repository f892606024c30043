"""The examples' vote (`agents.llm.example_vote`): a tree's examples tip a close decision.

The tree is the bookshop's of `test_routing_examples` (names, domain and words of its own,
loaded from a file as `AGENT_TREE_FILE` loads it). The model is a scripted decide-first
model whose decisions carry log-probabilities, as the embedded model's do: where it
leans only a little towards the wrong desk, the desk whose examples hold the message's
words wins; where it is sure, its answer stands.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.llm.example_vote import WEIGHT, fused, known_texts, shares
from agents.models.profile import ModelProfile
from agents.models.scripted import ScriptedModel
from agents.tree import build_support_tree
from tests.agents.conversation import Conversation
from tests.agents.test_decision_scoring import scored
from tests.agents.test_routing_examples import bookshop

KNOWN = {
    "billing": ("Refunds and invoices.", "You charged me twice."),
    "tech": ("Errors, crashes, installing.", "The app crashes on start."),
    "front": ("Greetings and orders.", "Hi there!"),
}
SCORED = ModelProfile(native_tools=False, decide_first=True, choice_scoring="logprobs")


def test_each_agent_scores_the_share_of_the_message_its_words_hold() -> None:
    vote = shares("the app crashed after I was charged", KNOWN)
    assert vote == pytest.approx({"billing": 1 / 5, "tech": 2 / 5, "front": 0.0})
    # A word every agent holds says nothing; a message of unknown words moves no agent.
    everywhere = {name: (*texts, "our service") for name, texts in KNOWN.items()}
    assert shares("service", everywhere) == {"billing": 0.0, "tech": 0.0, "front": 0.0}
    assert shares("the weather in Lisbon", KNOWN) == {"billing": 0.0, "tech": 0.0, "front": 0.0}
    # Two words only billing holds, and the one unknown word counted more: half of it.
    # Options that are not agents (a tool) keep their score.
    scores = {"billing": -1.0, "tech": -1.0, "front": -1.0, "rules_tool": -1.0}
    assert fused(scores, "You charged me twice", KNOWN) == pytest.approx(
        {"billing": -1.0 + WEIGHT / 2, "tech": -1.0, "front": -1.0, "rules_tool": -1.0}
    )


def test_a_bare_greeting_counts_and_numbers_do_not() -> None:
    """A message that is only a greeting or a thank-you is the front desk's topic
    (knowledge search drops such words); a greeting before a request is not, and an
    order number names no agent's area, so it does not thin the share."""
    assert shares("Hi, thank you!", KNOWN)["front"] > 0.0
    assert shares("Hi, you charged me twice", KNOWN) == shares("you charged me twice", KNOWN)
    assert shares("the app crashed after order 1234 was charged", KNOWN) == shares(
        "the app crashed after order was charged", KNOWN
    )


def test_an_agent_is_known_by_its_name_what_it_owns_and_its_examples() -> None:
    texts = known_texts(
        "billing_desk", "Refunds and invoices. Not deliveries or parcels.", ["Charged twice!"]
    )
    assert texts == ("billing desk", "Refunds and invoices.", "Charged twice!")
    known = {"billing_desk": texts, "front_desk": known_texts("front_desk", "Parcels.", [])}
    # "parcel" is only in what billing does not own; "bill" is in its name.
    assert shares("where is my parcel", known)["billing_desk"] == 0.0
    assert shares("a question about my bill", known)["billing_desk"] > 0.0


@pytest.mark.parametrize(
    ("message", "leaning", "answered_by"),
    [
        # The model leans to the front desk; the orders desk's examples hold the words.
        (
            "I paid twice for one cookbook, can I get a receipt?",
            {"front": -0.8, "orders": -1.1, "catalogue": -2.5},
            "orders_desk",
        ),
        # It leans to the orders desk; the catalogue's examples say "stock" and "poetry".
        (
            "Is there any poetry by Le Guin in stock?",
            {"orders": -0.9, "catalogue": -1.2, "front": -2.0},
            "finder",
        ),
        # It leans to the orders desk; a greeting is the front desk's own.
        (
            "Good morning, are you open on Sundays?",
            {"orders": -0.9, "front": -1.0, "catalogue": -3.0},
            "front_desk",
        ),
        # It leans to the orders desk; a bare thank-you is the front desk's own.
        (
            "Thank you!",
            {"orders": -0.9, "front": -1.2, "catalogue": -3.0},
            "front_desk",
        ),
    ],
)
async def test_a_close_call_goes_to_the_desk_whose_examples_hold_the_message(
    tmp_path: Path, message: str, leaning: dict[str, float], answered_by: str
) -> None:
    greedy = {"front": "front_desk", "orders": "orders_desk"}[max(leaning, key=leaning.__getitem__)]
    model = ScriptedModel([scored(greedy, leaning), "Here to help."], profile=SCORED)
    root = build_support_tree(model=model, path=bookshop(tmp_path))
    turn = await Conversation(root, model).send(message)
    assert turn[-1] == (answered_by, "Here to help.")
    model.assert_complete()


async def test_a_sure_answer_stands_against_the_examples(tmp_path: Path) -> None:
    """The model is sure the receipt question is the front desk's (say, the tree's
    descriptions told it so): the orders desk's examples do not overrule it."""
    sure = {"front": -0.05, "orders": -4.0, "catalogue": -5.0}
    model = ScriptedModel([scored("front_desk", sure), "Here to help."], profile=SCORED)
    root = build_support_tree(model=model, path=bookshop(tmp_path))
    turn = await Conversation(root, model).send("Can I get a receipt for the atlas?")
    assert turn == [("front_desk", "Here to help.")]
    model.assert_complete()


async def test_a_greedy_model_is_not_voted_over(tmp_path: Path) -> None:
    """Without log-probabilities there is no sureness to weigh the vote against: the
    constrained answer stands, and the examples reach the model in its options."""
    model = ScriptedModel([scored("front_desk", {}), "Here to help."], decide_first=True)
    root = build_support_tree(model=model, path=bookshop(tmp_path))
    turn = await Conversation(root, model).send("I paid twice for one cookbook.")
    assert turn == [("front_desk", "Here to help.")]
    assert "I paid twice for the same cookbook." in model.requests[0].system_instruction
    model.assert_complete()
