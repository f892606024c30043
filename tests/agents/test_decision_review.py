"""The review of a written reply on a decide-first model: a tool whose tree entry says
which replies need it first (`consult_before`) is a yes/no check of each reply; a tool
without one is offered against sending the reply, by its description.

Whole conversations on the default tree from `agents/support_tree.yaml`, played by a
scripted model; the texts are the embedded model's kind of answers (issue 16).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.events import Part
from agents.llm.agent import LlmAgent
from agents.llm.decide_first.pretend_actions import PretendAction, find_pretend_action
from agents.llm.decide_first.truncated_json import close_truncated_object
from agents.metrics import REGISTRY
from agents.models.base import LlmResponse
from agents.models.scripted import ScriptedModel, json_text
from agents.tree import build_support_tree
from tests.agents.conversation import Conversation
from tests.agents.test_decision import write_tree

DUPLICATE_CHARGE = (
    "Hi, I was charged twice for my March invoice INV-2291, 49.00 USD each time. Can I get "
    "a refund of the duplicate?"
)
UNCHECKED_PROMISE = "Yes, you will get a refund of the duplicate 49.00 USD charge."
REFUND_QUESTION = "Refund a duplicate 49.00 USD charge on INV-2291?"
CHECKED_ANSWER = "The duplicate 49.00 USD charge on INV-2291 will be refunded in full."


async def test_a_refund_promise_is_held_back_until_the_policy_is_consulted() -> None:
    before = REGISTRY.get("support_bot_reviews_total", agent="billing_agent", tool="policy_checker")
    model = ScriptedModel(
        [
            json_text("billing_agent"),  # the supervisor routes
            json_text("billing_agent"),  # billing_agent decides to answer itself
            UNCHECKED_PROMISE,  # and promises a refund, unchecked
            json_text("yes"),  # the consult check: the reply promises a refund
            json_text({"request": REFUND_QUESTION}),
            "ALLOWED: duplicate charges are refunded in full.",  # policy_checker
            json_text("billing_agent"),  # decides again, the policy in view: keeps it
            CHECKED_ANSWER,  # billing_agent again, the policy's answer in view
        ],
        decide_first=True,
    )
    turn = await Conversation(build_support_tree(model=model), model).send(DUPLICATE_CHARGE)
    assert turn == [
        ("support_supervisor", ("call", "transfer_to_agent", {"agent_name": "billing_agent"})),
        (
            "support_supervisor",
            ("response", "transfer_to_agent", {"result": "transferred to billing_agent"}),
        ),
        (
            "billing_agent",
            ("call", "policy_checker", {"request": REFUND_QUESTION}),
        ),
        (
            "billing_agent",
            (
                "response",
                "policy_checker",
                {"result": "ALLOWED: duplicate charges are refunded in full."},
            ),
        ),
        ("billing_agent", CHECKED_ANSWER),
    ]
    check = model.requests[3]
    assert check.response_schema is not None
    assert check.response_schema["title"] == "consult"
    assert check.response_schema["enum"] == ["yes", "no"]
    assert f"<<<\n{UNCHECKED_PROMISE}\n>>>" in check.contents[0].text
    # The question is the tree's own `consult_before` text, not a keyword in code.
    assert "Does this reply promise, offer or confirm a refund" in check.contents[0].text
    # The second answer sees the policy's answer; with the tool called, no second review.
    assert "ALLOWED: duplicate charges are refunded in full." in str(model.requests[-1].contents)
    after = REGISTRY.get("support_bot_reviews_total", agent="billing_agent", tool="policy_checker")
    assert after == before + 1
    model.assert_complete()


async def test_a_reply_that_needs_no_tool_is_sent_after_one_look() -> None:
    model = ScriptedModel(
        [
            json_text("support_supervisor"),
            "Hello! How can I help you today?",
            json_text("no"),  # the consult check: no refund promised
        ],
        decide_first=True,
    )
    conversation = Conversation(build_support_tree(model=model), model)
    assert await conversation.send("hi there") == [
        ("support_supervisor", "Hello! How can I help you today?")
    ]
    # A check whose answer is no option at all also sends the reply: never a lost answer.
    model.add(json_text("support_supervisor"), "Goodbye!", "not an option")
    assert await conversation.send("bye") == [("support_supervisor", "Goodbye!")]
    model.assert_complete()


async def test_a_one_call_model_gets_no_review() -> None:
    model = ScriptedModel([UNCHECKED_PROMISE])
    root = build_support_tree(model=model)
    assert await Conversation(root, model).send("refund?") == [
        ("support_supervisor", UNCHECKED_PROMISE)
    ]
    model.assert_complete()


async def test_a_tree_from_yaml_with_other_names_reviews_the_same_way(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            json_text("front_desk"),  # answers itself
            UNCHECKED_PROMISE,
            json_text("rules_checker"),  # the review consults its own policy tool
            json_text({"request": REFUND_QUESTION}),
            "DENIED: refunds need the invoice number.",  # rules_checker
            json_text("front_desk"),  # decides again, the tool's answer in view
            "Which invoice was charged twice?",
        ],
        decide_first=True,
    )
    root = build_support_tree(path=write_tree(tmp_path / "tree.yaml"), model=model)
    turn = await Conversation(root, model).send("I was charged twice, refund please")
    assert turn[0] == ("front_desk", ("call", "rules_checker", {"request": REFUND_QUESTION}))
    assert turn[-1] == ("front_desk", "Which invoice was charged twice?")
    review = model.requests[2]
    assert review.response_schema is not None
    assert review.response_schema["enum"] == ["front_desk", "rules_checker"]
    assert "Says whether a refund is allowed." in review.system_instruction
    # With its one tool called, the front desk's second reply is sent without a review.
    assert model.requests[-1].response_schema is None
    model.assert_complete()


def consult_tree(path: Path) -> Path:
    """`write_tree`'s names, the policy tool marked with the replies that need it."""
    text = write_tree(path).read_text(encoding="utf-8")
    marked = text.replace(
        "tools: [{agent_tool: rules_checker}]",
        "tools: [{agent_tool: rules_checker, consult_before: hand out money}]",
    )
    path.write_text(marked, encoding="utf-8")
    return path


async def test_a_tree_from_yaml_with_consult_before_checks_each_reply(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            json_text("front_desk"),  # answers itself
            UNCHECKED_PROMISE,
            json_text("yes"),  # the reply hands out money: consult first
            json_text({"request": REFUND_QUESTION}),
            "DENIED: refunds need the invoice number.",  # rules_checker
            json_text("front_desk"),  # decides again, the tool's answer in view
            "Which invoice was charged twice?",
            # the next turn: a greeting, checked once and sent
            json_text("front_desk"),
            "Hello again!",
            json_text("no"),
        ],
        decide_first=True,
    )
    root = build_support_tree(path=consult_tree(tmp_path / "tree.yaml"), model=model)
    conversation = Conversation(root, model)
    turn = await conversation.send("I was charged twice, refund please")
    assert turn[0] == ("front_desk", ("call", "rules_checker", {"request": REFUND_QUESTION}))
    assert turn[-1] == ("front_desk", "Which invoice was charged twice?")
    assert "Does this reply hand out money?" in model.requests[2].contents[0].text
    # The decision routes; the marked tool waits for a reply that needs it (the check),
    # and a tool without `consult_before` would still be an option.
    assert model.requests[0].response_schema is not None
    assert model.requests[0].response_schema["enum"] == ["accounts", "repairs", "front_desk"]
    assert "rules_checker" not in model.requests[0].system_instruction
    assert await conversation.send("hi") == [("front_desk", "Hello again!")]
    model.assert_complete()


JSON_TOOL_REPLY = (
    '{"tool": "customer_support", "args": {"request": "You can return the duplicate charges '
    'for March invoice INV-2291, 49.00 USD each time, which will be refunded."}}'
)


async def test_a_tool_call_written_as_text_is_asked_again_then_checked() -> None:
    """The embedded model's own answer in `support-bot chat` (issue 16): asked for a plain
    reply, billing_agent wrote a made-up tool call as JSON text."""
    model = ScriptedModel(
        [
            json_text("billing_agent"),  # the supervisor routes
            json_text("billing_agent"),  # billing_agent answers itself
            JSON_TOOL_REPLY,  # a tool call as text: never shown
            UNCHECKED_PROMISE,  # asked again: a refund promise
            json_text("yes"),  # the consult check holds it back
            json_text({"request": REFUND_QUESTION}),
            "ALLOWED: duplicate charges are refunded in full.",  # policy_checker
            json_text("billing_agent"),  # decides again, the policy in view: keeps it
            CHECKED_ANSWER,
        ],
        decide_first=True,
    )
    turn = await Conversation(build_support_tree(model=model), model).send(DUPLICATE_CHARGE)
    shown = [text for _, text in turn if isinstance(text, str)]
    assert shown == [CHECKED_ANSWER]
    assert ("billing_agent", ("call", "policy_checker", {"request": REFUND_QUESTION})) in turn
    assert "cannot be sent" in model.requests[3].contents[-1].text
    model.assert_complete()


async def test_a_reply_written_as_a_one_field_json_object_is_shown_as_its_text() -> None:
    """The embedded model's second billing answer in `support-bot chat` (issue 16)."""
    model = ScriptedModel(
        [
            json_text("billing_agent"),
            json_text("billing_agent"),
            json_text({"message": "Your March invoice INV-2291 lists two 49.00 USD charges."}),
            json_text("no"),  # the consult check: no refund promised
        ],
        decide_first=True,
    )
    turn = await Conversation(build_support_tree(model=model), model).send(DUPLICATE_CHARGE)
    assert turn[-1] == (
        "billing_agent",
        "Your March invoice INV-2291 lists two 49.00 USD charges.",
    )
    model.assert_complete()


def test_a_tool_call_in_broken_json_is_still_a_tool_call() -> None:
    """routing_dev's full run: inner quotes left unescaped, so the JSON does not parse."""
    broken = '{"tool": "policy_checker", "args": {"request": "result: {"result": "ALLOWED"}"}}'
    assert find_pretend_action(broken, targets=[], tools=["policy_checker"]) == PretendAction(
        "tool", "policy_checker"
    )
    # The tool already called this turn: a claim, asked for again.
    assert find_pretend_action(broken, targets=[], tools=[]) == PretendAction("claim")


CUT_ARGUMENTS = (
    '{"request": "Refund a duplicate 49.00 USD charge on INV-2291? Before promising any '
    "refund, call policy_checker. Before promising any refund, call policy_checker. Before "
    "promising any"
)


async def test_tool_arguments_cut_off_at_the_cap_are_closed_not_a_failed_turn() -> None:
    """routing_dev with replies (issue 16): the arguments written for policy_checker ran on
    until the output cap, an unterminated string. The call goes ahead with what was
    written; the turn does not end in the failure notice."""
    cut_before = REGISTRY.get("support_bot_output_cut_total", agent="billing_agent")
    model = ScriptedModel(
        [
            json_text("billing_agent"),
            json_text("billing_agent"),
            UNCHECKED_PROMISE,
            json_text("yes"),
            LlmResponse(parts=(Part(text=CUT_ARGUMENTS),), finish_reason="length"),
            "ALLOWED: duplicate charges are refunded in full.",
            json_text("billing_agent"),  # decides again, the policy in view: keeps it
            CHECKED_ANSWER,
        ],
        decide_first=True,
    )
    turn = await Conversation(build_support_tree(model=model), model).send(DUPLICATE_CHARGE)
    (call,) = [step for _, step in turn if isinstance(step, tuple) and step[0] == "call"][1:]
    assert call[1] == "policy_checker"
    assert call[2]["request"].startswith("Refund a duplicate 49.00 USD charge on INV-2291?")
    assert call[2]["request"].endswith("Before promising any")
    assert turn[-1] == ("billing_agent", CHECKED_ANSWER)
    assert REGISTRY.get("support_bot_output_cut_total", agent="billing_agent") == cut_before + 1
    model.assert_complete()


async def test_tool_arguments_that_are_not_cut_off_and_not_json_still_fail_the_turn() -> None:
    """Closing is only for a cut: a complete answer that is no JSON object is malformed."""
    model = ScriptedModel(
        [
            json_text("billing_agent"),
            json_text("billing_agent"),
            UNCHECKED_PROMISE,
            json_text("yes"),
            '{"request": "Refund a duplicate',  # stopped by the model, not by the cap
        ],
        decide_first=True,
    )
    events = await Conversation(build_support_tree(model=model), model).send_events(
        DUPLICATE_CHARGE
    )
    assert events[-1].error_code == "malformed_tool_call"
    model.assert_complete()


@pytest.mark.parametrize(
    ("cut", "closed"),
    [
        ('{"request": "abc', {"request": "abc"}),
        ('{"request": "abc\\', {"request": "abc"}),
        ('{"request": "abc", "extra', {"request": "abc"}),
        ('{"request": "abc", "extra":', {"request": "abc"}),
        ('{"request": "abc", "extra": ', {"request": "abc"}),
        ('{"request": "abc", ', {"request": "abc"}),
        ('{"a": {"b": [1, 2', {"a": {"b": [1, 2]}}),
        ('{"a": "x \\"y', {"a": 'x "y'}),
        ('noise {"request": "done"} trailing', {"request": "done"}),
        ("no object here", None),
        ('{"a": ]', None),
    ],
)
def test_a_cut_json_object_is_closed_where_it_stopped(
    cut: str, closed: dict[str, object] | None
) -> None:
    assert close_truncated_object(cut) == closed


POLICY_AS_TEXT = (
    '{"tool": "policy_checker", "args": {"request": "Payment declined by policy_checker due '
    "to incorrect account balance. Please verify your account for any discrepancies before "
    'rescheduling payment."}}'
)
DECLINED = (
    "I was just shopping online for some tickets and the payment was declined by you. Why "
    "has this happened? I am certain I have the right amount of funds in my account."
)


async def test_a_tool_call_written_again_after_the_tool_answered_gets_a_constrained_reply() -> None:
    """routing_dev with replies (issue 16, banking77 declined_card_payment): billing_agent
    wrote policy_checker's call as text (made real), then, with the answer in view, wrote
    the same call as text twice more. A call already made, written out again, is not
    asked for again (that only repeated it): the reply is asked for at once as the one
    field of an object, and that reply is shown instead of the failure notice."""
    reply = "Your card payment was declined; please check the card's details and try again."
    model = ScriptedModel(
        [
            json_text("billing_agent"),  # the supervisor routes
            json_text("billing_agent"),  # billing_agent answers itself
            POLICY_AS_TEXT,  # a tool call as text: made a real call
            json_text({"request": "Was this declined card payment refundable?"}),
            "DENIED: declined payments are not refunded.",  # policy_checker
            POLICY_AS_TEXT,  # the answer in view, the same call as text again
            json_text({"reply": reply}),  # the constrained reply, asked at once
        ],
        decide_first=True,
    )
    root = build_support_tree(model=model)
    billing = root.find_agent("billing_agent")
    assert isinstance(billing, LlmAgent)
    billing.disallow_transfer_to_parent = True
    turn = await Conversation(root, model).send(DECLINED)
    shown = [text for _, text in turn if isinstance(text, str)]
    assert shown == [reply]
    constrained = model.requests[-1]
    assert constrained.response_schema is not None
    assert constrained.response_schema["required"] == ["reply"]
    assert "DENIED: declined payments are not refunded." in str(constrained.contents)
    model.assert_complete()


async def test_a_reply_naming_the_tool_it_consulted_is_asked_for_again() -> None:
    """routing_dev with replies (issue 16): after a real policy_checker call, billing_agent
    told the customer "The policy_checker has denied this request". The call was real,
    but the name is internal: the reply is asked for again."""
    named = (
        "I apologize, but the refund is not permitted. The policy_checker has denied this request."
    )
    clean = "I'm sorry, but this order's refund is not permitted under our refund policy."
    model = ScriptedModel(
        [
            json_text("billing_agent"),  # the supervisor routes
            json_text("billing_agent"),  # billing_agent answers (no consult tool offered)
            "Your refund is on its way.",  # a promise, held back by the consult check
            json_text("yes"),
            json_text({"request": "Refund a cancelled order?"}),
            "DENIED: cancelled orders past dispatch are not refunded.",
            json_text("billing_agent"),  # decides again, the policy in view: keeps it
            named,  # the answer names the tool
            clean,  # asked again
        ],
        decide_first=True,
    )
    turn = await Conversation(build_support_tree(model=model), model).send(
        "Hello, I recently ordered an item and I need help with cancelling it and a refund."
    )
    shown = [text for _, text in turn if isinstance(text, str)]
    assert shown == [clean]
    assert "cannot be sent" in model.requests[-1].contents[-1].text
    model.assert_complete()
