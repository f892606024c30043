"""Decide first on models without native tool calling, and no pretend actions.

The scripted model plays a decide-first model (`decide_first=True`): every step with
transfer targets or tools is a constrained decision, then the act. The failure texts are
the embedded model's own (issue 16).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents import AgentTool, LlmAgent
from agents.llm.decide_first import Decision, observe_decisions
from agents.metrics import REGISTRY
from agents.models.base import LlmRequest
from agents.models.scripted import ScriptedModel, json_text, transfer
from agents.tree import build_support_tree
from tests.agents.conversation import Conversation

PRETEND_TRANSFER = "Understood. I will transfer your issue to the tech_support agent."
RECITED_POLICY = (
    "Yes, you can get a refund of the duplicate. Remember to call policy_checker first to "
    "ensure that your refund is allowed. The rule is that duplicate charges are not "
    "refundable."
)


def choose(name: str) -> str:
    return json_text(name)


def support_tree(*, names: dict[str, str] | None = None) -> LlmAgent:
    """A supervisor with two transfer targets and one AgentTool."""
    n = {"root": "support_supervisor", "billing": "billing_agent", "tech": "tech_support"}
    n |= {"policy": "policy_checker"} | (names or {})
    billing = LlmAgent(
        name=n["billing"], description="Invoices and refunds.", disallow_transfer_to_peers=True
    )
    tech = LlmAgent(
        name=n["tech"], description="Errors and crashes.", disallow_transfer_to_peers=True
    )
    policy = LlmAgent(name=n["policy"], description="Says whether a refund is allowed.")
    return LlmAgent(
        name=n["root"],
        description="Greetings and general questions.",
        instruction="Transfer billing to billing_agent. Call policy_checker before refunds.",
        tools=[AgentTool(policy)],
        sub_agents=[billing, tech],
    )


def decision_enum(request: LlmRequest) -> list[str]:
    assert request.response_schema is not None
    return list(request.response_schema["enum"])


async def test_decision_request_allows_exactly_answer_the_targets_and_the_tool() -> None:
    model = ScriptedModel(
        [choose("support_supervisor"), "Hello! How can I help?", choose("support_supervisor")],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send("hi")
    assert turn == [("support_supervisor", "Hello! How can I help?")]
    decision, reply, review = model.requests
    assert decision_enum(decision) == [
        "billing_agent",
        "tech_support",
        "support_supervisor",  # answering itself
        "policy_checker",
    ]
    assert decision.tools == [] and decision.config.max_tokens is not None
    for line in ("billing_agent: ", "Invoices and refunds.", "Errors and crashes.", "general"):
        assert line in decision.system_instruction
    # The reply is written with no tools in sight and is told not to pretend.
    assert reply.tools == [] and reply.response_schema is None
    assert "never name internal agents" in reply.system_instruction
    # The decision reads the conversation fenced under its question, not as chat turns.
    assert [c.role for c in decision.contents] == ["user"]
    assert decision.contents[0].text.startswith("The customer's latest message")
    assert "<<<\nhi\n>>>" in decision.contents[0].text
    # The written reply gets a second look: send it, or consult the tool not yet called.
    assert decision_enum(review) == ["support_supervisor", "policy_checker"]
    assert "<<<\nHello! How can I help?\n>>>" in review.contents[0].text
    assert "Says whether a refund is allowed." in review.system_instruction
    model.assert_complete()


@pytest.mark.parametrize(
    ("target", "text"),
    [("billing_agent", "Refund of 49.00 USD is on its way."), ("tech_support", "Clear the cache.")],
)
async def test_a_transfer_choice_is_the_ordinary_transfer_event(target: str, text: str) -> None:
    model = ScriptedModel([choose(target), choose(target), text], decide_first=True)
    conversation = Conversation(support_tree(), model)
    turn = await conversation.send("help")
    assert turn == [
        ("support_supervisor", ("call", "transfer_to_agent", {"agent_name": target})),
        (
            "support_supervisor",
            ("response", "transfer_to_agent", {"result": f"transferred to {target}"}),
        ),
        (target, text),
    ]
    # The target may hand the request back to the supervisor that sent it (the seed's
    # parent rule), so it decides first, then answers.
    assert decision_enum(model.requests[1]) == ["support_supervisor", target]
    assert model.requests[2].agent_name == target and model.requests[2].tools == []
    # The hand-off's bookkeeping is left out of the target's view: only the request.
    assert [c.text for c in model.requests[2].contents] == ["help"]
    # The resume rule: the next message goes to the target, which now decides between
    # answering and going back to its parent.
    model.add(
        choose("support_supervisor"),
        choose("support_supervisor"),
        "Hello again.",
        choose("support_supervisor"),  # the review sends it
    )
    turn = await conversation.send("actually, a different question")
    assert decision_enum(model.requests[3]) == ["support_supervisor", target]
    # The decision reads the earlier turns as fenced lines, each by its author.
    assert f"customer: help\n{target}: {text}" in model.requests[3].contents[0].text
    assert turn[0] == (target, ("call", "transfer_to_agent", {"agent_name": "support_supervisor"}))
    assert turn[-1] == ("support_supervisor", "Hello again.")
    # Back at the supervisor, the agent that handed over may be handed the request back.
    assert target in decision_enum(model.requests[4])
    model.assert_complete()


async def test_a_tool_choice_writes_its_arguments_then_decides_again() -> None:
    model = ScriptedModel(
        [
            choose("policy_checker"),
            json_text({"request": "Is a refund of a duplicate charge allowed?"}),
            "ALLOWED: duplicate charges are refunded.",  # policy_checker's own step
            choose("support_supervisor"),
            "Yes: the duplicate 49.00 USD charge will be refunded.",
        ],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send("Refund my duplicate charge?")
    assert turn == [
        (
            "support_supervisor",
            ("call", "policy_checker", {"request": "Is a refund of a duplicate charge allowed?"}),
        ),
        (
            "support_supervisor",
            ("response", "policy_checker", {"result": "ALLOWED: duplicate charges are refunded."}),
        ),
        ("support_supervisor", "Yes: the duplicate 49.00 USD charge will be refunded."),
    ]
    arguments = model.requests[1]
    assert arguments.response_schema is not None
    assert arguments.response_schema["properties"].keys() == {"request"}
    # Once called, the tool is no longer an option in this turn.
    assert decision_enum(model.requests[3]) == [
        "billing_agent",
        "tech_support",
        "support_supervisor",
    ]
    # The reply is asked for under the tool's answer, which is said to be the tool's, with
    # the customer's message named again: as bare user text, a small model thanked the
    # customer for "the detailed information" instead of answering them.
    answer = model.requests[4].contents[-1]
    assert answer.role == "user"
    assert answer.text.startswith("Result of tool policy_checker:")
    assert "the customer did not write it" in answer.text
    assert answer.text.endswith("<<<\nRefund my duplicate charge?\n>>>)")
    model.assert_complete()


async def test_a_call_written_out_again_after_its_answer_gets_the_reply_field() -> None:
    # Under policy_checker's answer the embedded model wrote the same call again as text,
    # and again when asked once more; asked for the reply as an object's one field, it
    # answered. So that is asked at once, and no decision can turn it into a transfer.
    again = '{"tool": "policy_checker", "args": {"request": "Is a refund allowed?"}}'
    model = ScriptedModel(
        [
            choose("policy_checker"),
            json_text({"request": "Is a refund of a duplicate charge allowed?"}),
            "ALLOWED: duplicate charges are refunded.",  # policy_checker's own step
            choose("support_supervisor"),
            again,
            json_text({"reply": "Yes: the duplicate 49.00 USD charge will be refunded."}),
        ],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send("Refund my duplicate charge?")
    assert turn[-1] == (
        "support_supervisor",
        "Yes: the duplicate 49.00 USD charge will be refunded.",
    )
    assert len(turn) == 3
    asked = model.requests[5]
    assert asked.response_schema is not None
    assert asked.response_schema["title"] == "reply"
    model.assert_complete()


async def test_a_reply_with_no_tool_answer_before_it_gets_no_reminder() -> None:
    model = ScriptedModel(
        [choose("support_supervisor"), "Hello! How can I help?", choose("support_supervisor")],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send("Hello there")
    assert turn == [("support_supervisor", "Hello! How can I help?")]
    assert model.requests[1].contents[-1].text == "Hello there"
    model.assert_complete()


async def test_every_decide_first_call_and_the_agent_tool_childs_are_counted() -> None:
    model = ScriptedModel(
        [
            choose("policy_checker"),
            json_text({"request": "Is a refund of a duplicate charge allowed?"}),
            "ALLOWED: duplicate charges are refunded.",  # policy_checker, as an AgentTool
            choose("support_supervisor"),
            "Yes: the duplicate 49.00 USD charge will be refunded.",
        ],
        decide_first=True,
    )
    await Conversation(support_tree(), model).send("Refund my duplicate charge?")
    calls = {
        agent: REGISTRY.get("support_bot_model_calls_total", agent=agent)
        for agent in ("support_supervisor", "policy_checker")
    }
    # Two steps of two calls each (decide, then act), and the child's one call.
    assert calls == {"support_supervisor": 4, "policy_checker": 1}
    assert sum(calls.values()) == len(model.requests)
    child = model.requests[2]
    assert child.agent_name == "policy_checker"
    shown = sum(len(c.text) for c in child.contents) + len(child.system_instruction)
    prompt = REGISTRY.get("support_bot_model_tokens_total", agent="policy_checker", kind="prompt")
    assert prompt == shown // 4  # the scripted model's count for the child's one request


async def test_pretend_transfer_becomes_the_real_transfer() -> None:
    model = ScriptedModel(
        [
            choose("support_supervisor"),
            PRETEND_TRANSFER,
            choose("tech_support"),
            "Run the repair tool.",
        ],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send(
        "The desktop app crashes with error 0x80070005 every time I open the settings page."
    )
    assert [text for _, text in turn if isinstance(text, str)] == ["Run the repair tool."]
    assert turn[0] == (
        "support_supervisor",
        ("call", "transfer_to_agent", {"agent_name": "tech_support"}),
    )
    assert turn[-1] == ("tech_support", "Run the repair tool.")
    model.assert_complete()


async def test_pretend_transfer_is_caught_on_a_one_call_model_too() -> None:
    model = ScriptedModel([PRETEND_TRANSFER, "Run the repair tool."])
    turn = await Conversation(support_tree(), model).send("The app crashes.")
    assert all(text != PRETEND_TRANSFER for _, text in turn)
    assert turn[-1] == ("tech_support", "Run the repair tool.")


async def test_recited_instruction_becomes_the_policy_call() -> None:
    before = REGISTRY.get(
        "support_bot_pretend_actions_total", agent="support_supervisor", fix="called"
    )
    model = ScriptedModel(
        [
            choose("support_supervisor"),
            RECITED_POLICY,
            json_text({"request": "Refund a duplicate charge of 49.00 USD on INV-2291?"}),
            "ALLOWED: duplicate charges are refunded in full.",
            choose("billing_agent"),
            choose("billing_agent"),
            "The duplicate 49.00 USD charge on INV-2291 will be refunded.",
        ],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send(
        "Hi, I was charged twice for my March invoice INV-2291, 49.00 USD each time. Can I "
        "get a refund of the duplicate?"
    )
    shown = [text for _, text in turn if isinstance(text, str)]
    assert shown == ["The duplicate 49.00 USD charge on INV-2291 will be refunded."]
    assert turn[0][1][:2] == ("call", "policy_checker")
    assert turn[-1][0] == "billing_agent"
    after = REGISTRY.get(
        "support_bot_pretend_actions_total", agent="support_supervisor", fix="called"
    )
    assert after == before + 1
    model.assert_complete()


async def test_a_bare_claim_is_asked_again_then_settled_by_a_decision() -> None:
    caught: list[str] = []
    model = ScriptedModel(
        [
            choose("support_supervisor"),
            "I'll escalate this for you right away.",
            "Let me forward this to the right team.",
            choose("billing_agent"),
            choose("billing_agent"),
            "Your invoice is attached.",
        ],
        decide_first=True,
    )
    with observe_decisions(lambda d: None, lambda agent, p: caught.append(p.kind)):
        turn = await Conversation(support_tree(), model).send("invoice?")
    assert turn[-1] == ("billing_agent", "Your invoice is attached.")
    assert caught == ["claim", "claim"]
    # The second reply was asked with the rejected one and why; the last decision offers
    # only real actions.
    note = model.requests[2].contents[-1].text
    assert "cannot be sent" in note
    # Marked as the model's note, with the customer's message quoted again: as bare user
    # text it was answered ("I'm sorry, but I cannot send that reply.").
    assert note.startswith("(A note for you, not from the customer")
    assert note.endswith("<<<\ninvoice?\n>>>)")
    assert decision_enum(model.requests[3]) == ["billing_agent", "tech_support", "policy_checker"]
    model.assert_complete()


async def test_a_reply_cut_down_keeps_its_paragraphs_steps_and_quote() -> None:
    # The sentences left after a pretence is cut out keep the reply's layout: the
    # embedded model's refund reply went out as "... business days. > When a customer
    # ...", its quoted policy run into the answer.
    leaf = LlmAgent(name="solo", instruction="Answer.")
    model = ScriptedModel(
        [
            "I will escalate this.",
            "Try these steps:\n\n1. Open Settings.\n2. Press Reset. I will escalate this"
            " if it fails.\n\n> The guide says: reset first. Then sign in again.",
        ],
        decide_first=True,
    )
    assert await Conversation(leaf, model).send("help") == [
        (
            "solo",
            "Try these steps:\n\n1. Open Settings.\n2. Press Reset.\n\n"
            "> The guide says: reset first. Then sign in again.",
        )
    ]
    model.assert_complete()


async def test_a_claim_with_nothing_to_act_on_is_cut_out_or_fails() -> None:
    leaf = LlmAgent(name="solo", instruction="Answer.")
    model = ScriptedModel(
        [
            "I will escalate this.",
            "1. Restart the app. 2. Sign in again.\nIf that fails, we will escalate it.",
        ],
        decide_first=True,
    )
    turn = await Conversation(leaf, model).send("help")
    assert turn == [("solo", "1. Restart the app. 2. Sign in again.")]

    # Asked again, then once more under a schema that holds only the reply: still a
    # pretence, so the turn fails with the usual notice.
    model = ScriptedModel(
        [
            "I will escalate this.",
            "I am escalating this now.",
            json_text({"reply": "I am escalating this now."}),
        ],
        decide_first=True,
    )
    events = await Conversation(leaf, model).send_events("help")
    assert events[-1].error_code == "pretend_action"
    assert "escalat" not in events[-1].text
    assert model.requests[2].response_schema is not None
    assert model.requests[2].response_schema["title"] == "reply"
    model.assert_complete()

    model = ScriptedModel(
        [
            "Check the `transfer_to_agent` tool's permissions.",
            "Use transfer_to_agent.",
            json_text({"reply": "Use transfer_to_agent."}),
        ],
        decide_first=True,
    )
    events = await Conversation(leaf, model).send_events("help")
    assert events[-1].error_code == "pretend_action"
    assert "escalat" not in events[-1].text
    model.assert_complete()


def write_tree(path: Path) -> Path:
    path.write_text(
        """
root: front_desk
agents:
  front_desk:
    description: Greetings and general questions.
    instruction: Route each request.
    tools: [{agent_tool: rules_checker}]
    sub_agents: [accounts, repairs]
  accounts:
    description: Invoices and refunds.
    disallow_transfer_to_peers: true
  repairs:
    type: sequential
    description: Errors and crashes.
    sub_agents: [triage]
  triage:
    description: Finds the cause.
    instruction: Find the cause.
  rules_checker:
    description: Says whether a refund is allowed.
    instruction: ALLOWED or DENIED.
""",
        encoding="utf-8",
    )
    return path


async def test_a_tree_from_yaml_with_other_names_routes_the_same_way(tmp_path: Path) -> None:
    model = ScriptedModel(
        [choose("front_desk"), PRETEND_TRANSFER.replace("tech_support", "repairs"), "Reinstall."],
        decide_first=True,
    )
    root = build_support_tree(path=write_tree(tmp_path / "tree.yaml"), model=model)
    decisions: list[Decision] = []
    with observe_decisions(decisions.append):
        turn = await Conversation(root, model).send("It crashes.")
    assert decision_enum(model.requests[0]) == [
        "accounts",
        "repairs",
        "front_desk",
        "rules_checker",
    ]
    assert turn[0] == ("front_desk", ("call", "transfer_to_agent", {"agent_name": "repairs"}))
    assert turn[-1] == ("triage", "Reinstall.")
    # The workflow's agent sees the request, not the hand-off's bookkeeping.
    assert [c.text for c in model.requests[-1].contents] == ["It crashes."]
    assert [(d.agent, d.choice, d.kind) for d in decisions] == [
        ("front_desk", "front_desk", "answer")
    ]

    model.add(choose("accounts"), choose("accounts"), "Refund issued.")
    turn = await Conversation(
        build_support_tree(path=tmp_path / "tree.yaml", model=model), model
    ).send("refund")
    assert turn[-1] == ("accounts", "Refund issued.")
    model.assert_complete()


async def test_a_one_call_model_keeps_one_call_per_step() -> None:
    model = ScriptedModel([transfer("billing_agent"), "Refund issued."])
    turn = await Conversation(support_tree(), model).send("refund")
    assert turn[-1] == ("billing_agent", "Refund issued.")
    first = model.requests[0]
    assert len(model.requests) == 2
    assert [t.name for t in first.tools] == ["policy_checker", "transfer_to_agent"]
    assert first.response_schema is None
    model.assert_complete()


async def test_every_decide_first_call_goes_through_the_model_callbacks() -> None:
    from agents.callbacks import CallbackContext
    from agents.models.base import LlmResponse

    seen: list[LlmRequest] = []

    def before(ctx: CallbackContext, request: LlmRequest) -> LlmResponse | None:
        seen.append(request)
        return None

    def after(ctx: CallbackContext, response: LlmResponse) -> LlmResponse | None:
        if response.text == "Hello! How can I help?":
            return LlmResponse.from_text("Hello from the callback.")
        return None

    root = support_tree()
    root.before_model_callback = [before]
    root.after_model_callback = [after]
    model = ScriptedModel(
        [choose("support_supervisor"), "Hello! How can I help?", choose("support_supervisor")],
        decide_first=True,
    )
    turn = await Conversation(root, model).send("hi")
    assert turn == [("support_supervisor", "Hello from the callback.")]
    # The decision, the answer and its review: all seen by the callback, as sent.
    assert seen == model.requests
    assert decision_enum(seen[0])[-2:] == ["support_supervisor", "policy_checker"]
    assert seen[1].response_schema is None
    model.assert_complete()


async def test_a_handoff_record_reaches_a_decide_first_step_as_quoted_data_only() -> None:
    from agents.handoff import handoff_event
    from agents.history import HANDOFF_PREFIX

    model = ScriptedModel([choose("billing_agent"), "Happy to help."], decide_first=True)
    conversation = await Conversation(support_tree(), model).start()
    assert conversation.session_id is not None
    session = await conversation.service.get_session(
        app_name="support", user_id="u1", session_id=conversation.session_id
    )
    assert session is not None
    note = "Customer was charged twice for order 42."
    await conversation.service.append_event(session, handoff_event(note, target="billing_agent"))

    assert await conversation.send("any news?") == [("billing_agent", "Happy to help.")]
    decision, reply = model.requests
    # The decision reads the record inside its fenced conversation, as context.
    assert "context: > " + note in decision.contents[0].text
    assert reply.contents[0].text == HANDOFF_PREFIX + "> " + note
    for request in model.requests:
        # The record's text is the handed-over context; its transfer is bookkeeping and
        # never shown, and nothing of it is the model's own words.
        assert all("transfer_to_agent" not in c.text for c in request.contents)
        assert all(c.role != "model" for c in request.contents)
    model.assert_complete()


async def test_a_reply_naming_an_agent_out_of_reach_is_asked_again() -> None:
    # billing_agent cannot reach its peer: naming it is a pretence with no action behind it.
    model = ScriptedModel(
        [
            choose("billing_agent"),
            choose("billing_agent"),
            "I have checked with tech_support: the invoice is fine.",
            "Your invoice INV-7 is attached.",
        ],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send("invoice?")
    assert [text for _, text in turn if isinstance(text, str)] == [
        "Your invoice INV-7 is attached."
    ]
    assert "cannot be sent" in model.requests[-1].contents[-1].text
    model.assert_complete()


async def test_a_misrouted_request_is_handed_back_in_the_same_turn() -> None:
    """The supervisor sends a crash report to billing_agent; billing_agent hands it back
    (the seed's parent rule, as on a one-call model), and the supervisor, which may not
    repeat its hand-off, sends it on to tech_support: one turn, no ping-pong."""
    crash = "The desktop app crashes with error 0x80070005 when I open settings."
    model = ScriptedModel(
        [
            choose("billing_agent"),  # misrouted
            choose("support_supervisor"),  # billing_agent hands it back
            choose("tech_support"),
            choose("tech_support"),  # tech_support keeps it
            "Clear the app's cache, then reinstall it.",
        ],
        decide_first=True,
    )
    turn = await Conversation(support_tree(), model).send(crash)
    assert turn == [
        ("support_supervisor", ("call", "transfer_to_agent", {"agent_name": "billing_agent"})),
        (
            "support_supervisor",
            ("response", "transfer_to_agent", {"result": "transferred to billing_agent"}),
        ),
        ("billing_agent", ("call", "transfer_to_agent", {"agent_name": "support_supervisor"})),
        (
            "billing_agent",
            ("response", "transfer_to_agent", {"result": "transferred to support_supervisor"}),
        ),
        ("support_supervisor", ("call", "transfer_to_agent", {"agent_name": "tech_support"})),
        (
            "support_supervisor",
            ("response", "transfer_to_agent", {"result": "transferred to tech_support"}),
        ),
        ("tech_support", "Clear the app's cache, then reinstall it."),
    ]
    assert decision_enum(model.requests[1]) == ["support_supervisor", "billing_agent"]
    # The bound: the supervisor already handed this turn to billing_agent, so it is not
    # offered again; each hand-off happens at most once a turn.
    assert decision_enum(model.requests[2]) == [
        "tech_support",
        "support_supervisor",
        "policy_checker",
    ]
    assert decision_enum(model.requests[3]) == ["support_supervisor", "tech_support"]
    model.assert_complete()
