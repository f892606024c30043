"""Replies grounded in the knowledge base, on the default tree from
`agents/support_tree.yaml` over a real SQLite index of the shipped sample: on a
decide-first model the sections are retrieved before the step; every reply's values are
checked against the sections and the conversation, and a failing reply is written again
once, then stripped or replaced by the honest answer. Whole conversations, played by a
scripted model."""

from __future__ import annotations

from collections.abc import Sequence

from agents.events import Event
from agents.knowledge.reply_check import CHECK_KEY, NOT_FOUND_TEXT, SOURCES_KEY
from agents.knowledge.search import KnowledgeHit, KnowledgeSearch
from agents.llm.grounding import ANSWER_MAX_TOKENS
from agents.metrics import REGISTRY
from agents.models.scripted import ScriptedModel, call, json_text
from agents.runner import Runner
from agents.sessions.service import InMemorySessionService
from agents.tree import build_support_tree
from storage import Database
from tests.agents.conversation import Conversation

DUPLICATE_CHARGE = (
    "Hi, I was charged twice for my March invoice INV-2291, 49.00 USD each time. Can I get "
    "a refund of the duplicate?"
)
GROUNDED = (
    "The duplicate 49.00 USD charge on INV-2291 is refunded in full to your original "
    "payment method within 5 to 10 business days."
)
INVENTED = "You will get 98.00 USD back within 5 to 10 business days."
# What a small model's answer from prefetched sections gets quoted under it: the best
# section's three sentences sharing most of the question's words.
QUOTE = (
    "\n\n> A second charge for the same invoice number is a duplicate charge, and we refund it "
    "in full. Send us the invoice number (for example INV-2291) and the amount of each "
    "charge; we check both charges on your account, then refund the duplicate to your "
    "original payment method. A pending authorisation that disappears within 3 business "
    "days is not a charge and needs no refund."
)


def _to_billing(*billing: str, covered: str | None = "yes") -> ScriptedModel:
    """The supervisor routes to billing_agent, which answers itself and is not held back
    for the policy check; the coverage check answers `covered` (None: not asked, when no
    section is relevant); then `billing` plays the rest."""
    return ScriptedModel(
        [
            json_text("billing_agent"),  # the supervisor's decision
            json_text("billing_agent"),  # billing_agent answers itself
            billing[0],  # its reply
            json_text("no"),  # the consult check: no refund promised before the policy
            *([json_text(covered)] if covered is not None else []),
            *billing[1:],
        ],
        decide_first=True,
    )


async def _reply(conversation: Conversation) -> Event:
    session = await conversation.runner.session_service.get_session(
        app_name="support", user_id=conversation.user_id, session_id=conversation.session_id
    )
    assert session is not None
    return [e for e in session.events if e.author == "billing_agent" and e.text][-1]


def _checks(outcome: str) -> float:
    return REGISTRY.get(
        "support_bot_knowledge_checks_total", agent="billing_agent", outcome=outcome
    )


async def test_grounded_reply_answers_from_prefetched_sections_and_cites_them(
    db: Database,
) -> None:
    before = _checks("supported")
    model = _to_billing(GROUNDED)
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send(DUPLICATE_CHARGE)
    assert turn[-1] == ("billing_agent", GROUNDED + QUOTE)
    # The answer was written with the sections under the instruction, the search unasked.
    answer = model.requests[2]
    assert "Refund policy (sample) › Duplicate charges" in answer.system_instruction
    assert answer.config.max_tokens == ANSWER_MAX_TOKENS
    # Greedy (the tree sets no temperature): the same question gets the same answer.
    assert answer.config.temperature == 0.0
    assert "search_knowledge" not in str(model.requests[1].response_schema)
    reply = await _reply(conversation)
    assert reply.custom_metadata[CHECK_KEY] == "supported"
    cited = reply.custom_metadata[SOURCES_KEY]
    assert {
        "id": "policies/refund-policy#duplicate-charges",
        "title": "Refund policy (sample)",
        "heading": "Duplicate charges",
        "url": "https://help.example.com/policies/refunds",
        "collection": "policies",
    } in cited
    assert _checks("supported") == before + 1
    model.assert_complete()


async def test_grounded_reply_with_an_invented_amount_is_written_again(db: Database) -> None:
    before = _checks("rewritten")
    model = _to_billing(INVENTED, GROUNDED)
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send(DUPLICATE_CHARGE)
    assert turn[-1] == ("billing_agent", GROUNDED + QUOTE)
    again = model.requests[-1]
    assert again.tools == [] and again.contents[-2].text == INVENTED
    assert "amount '98.00 USD'" in again.contents[-1].text
    assert again.contents[-1].text.startswith("(A note for you, not from the customer")
    assert again.contents[-1].text.endswith(f"<<<\n{DUPLICATE_CHARGE}\n>>>)")
    assert (await _reply(conversation)).custom_metadata[CHECK_KEY] == "rewritten"
    assert _checks("rewritten") == before + 1
    model.assert_complete()


async def test_grounded_reply_failing_twice_is_stripped_of_its_unsupported_sentences(
    db: Database,
) -> None:
    kept = "The duplicate charge on INV-2291 is refunded in full to your original payment method."
    model = _to_billing(f"{kept} You also get a 20% discount.", "A 20% discount applies too.")
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send(DUPLICATE_CHARGE)
    assert turn[-1] == ("billing_agent", kept + QUOTE)
    assert (await _reply(conversation)).custom_metadata[CHECK_KEY] == "stripped"
    model.assert_complete()


async def test_grounded_reply_with_nothing_true_left_is_the_honest_answer(db: Database) -> None:
    model = _to_billing("Refunds take 45 days.", "Refunds take 60 days.")
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send(DUPLICATE_CHARGE)
    assert turn[-1] == ("billing_agent", NOT_FOUND_TEXT)
    reply = await _reply(conversation)
    assert reply.custom_metadata == {SOURCES_KEY: [], CHECK_KEY: "not_found"}
    model.assert_complete()


async def test_question_the_documents_do_not_cover_gets_the_honest_answer(db: Database) -> None:
    before = _checks("not_found")
    model = _to_billing("Yes, we accept bitcoin and give a 5% discount for it.", covered=None)
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send("Can I pay my invoices with cryptocurrency like bitcoin?")
    assert turn[-1] == ("billing_agent", NOT_FOUND_TEXT)
    assert "has nothing on this question" in model.requests[2].system_instruction
    assert _checks("not_found") == before + 1
    model.assert_complete()


async def test_sections_the_model_says_do_not_answer_the_question_give_the_honest_answer(
    db: Database,
) -> None:
    """The sections share the question's words, and the reply states only what they say,
    but the coverage check answers "no": the customer gets the honest answer."""
    model = _to_billing("Duplicate charges are refunded in full.", covered="no")
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send(DUPLICATE_CHARGE)
    assert turn[-1] == ("billing_agent", NOT_FOUND_TEXT)
    asked = model.requests[-1]
    assert asked.response_schema == {"title": "coverage", "type": "string", "enum": ["yes", "no"]}
    assert "Refund policy (sample) › Duplicate charges" in asked.system_instruction
    assert DUPLICATE_CHARGE in asked.contents[-1].text and asked.tools == []
    reply = await _reply(conversation)
    assert reply.custom_metadata == {SOURCES_KEY: [], CHECK_KEY: "not_found"}
    model.assert_complete()


async def test_native_tool_model_searches_itself_and_its_reply_is_checked(db: Database) -> None:
    model = ScriptedModel(
        [
            call("transfer_to_agent", agent_name="billing_agent"),
            call("search_knowledge", query="duplicate charge refund"),
            INVENTED,
            GROUNDED,
        ]
    )
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send(DUPLICATE_CHARGE)
    assert turn[-1] == ("billing_agent", GROUNDED)
    reply = await _reply(conversation)
    assert reply.custom_metadata[CHECK_KEY] == "rewritten"
    assert "policies/refund-policy#duplicate-charges" in {
        s["id"] for s in reply.custom_metadata[SOURCES_KEY]
    }
    model.assert_complete()


async def test_native_tool_model_answering_without_searching_is_checked_all_the_same(
    db: Database,
) -> None:
    model = ScriptedModel(
        [call("transfer_to_agent", agent_name="billing_agent"), INVENTED, GROUNDED]
    )
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send(DUPLICATE_CHARGE)
    assert turn[-1] == ("billing_agent", GROUNDED)
    reply = await _reply(conversation)
    assert reply.custom_metadata[CHECK_KEY] == "rewritten"
    assert "amount '98.00 USD'" in model.requests[-1].contents[-1].text
    assert "Refund policy (sample) › Duplicate charges" in model.requests[-1].system_instruction
    model.assert_complete()


async def test_small_talk_is_not_grounded(db: Database) -> None:
    model = _to_billing("You're welcome!", covered=None)
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    assert (await conversation.send("thanks!"))[-1] == ("billing_agent", "You're welcome!")
    assert CHECK_KEY not in (await _reply(conversation)).custom_metadata
    model.assert_complete()


async def test_reply_saying_the_documents_do_not_answer_is_the_honest_answer(
    db: Database,
) -> None:
    model = _to_billing(
        "I could not find anything about a card surcharge in the sections.", covered=None
    )
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send(
        "I was charged twice this month, 49.00 USD each time. Is there a card surcharge?"
    )
    assert turn[-1] == ("billing_agent", NOT_FOUND_TEXT)
    assert (await _reply(conversation)).custom_metadata[CHECK_KEY] == "not_found"
    model.assert_complete()


async def test_reply_saying_a_documented_code_is_not_covered_is_written_again(
    db: Database,
) -> None:
    """The customer asks about form FIN-7, which the refund policy states; a reply saying
    the documentation does not list it is written again once, and is never sent as it
    was, nor over a quote of the section it denies."""
    asked = "My refund is 700.00 USD. Do I need form FIN-7 for it?"
    denied = "Form FIN-7 is not listed in our documentation."
    answer = "Yes: refunds over 500.00 USD need the finance team's approval on form FIN-7."
    before = _checks("rewritten")
    model = _to_billing(denied, answer, covered=None)
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send(asked)
    author, text = turn[-1]
    assert author == "billing_agent" and text.startswith(answer + "\n\n> ")
    again = model.requests[-1]
    assert again.contents[-2].text == denied
    assert "do cover 'form FIN-7'" in again.contents[-1].text
    reply = await _reply(conversation)
    assert reply.custom_metadata[CHECK_KEY] == "rewritten"
    cited = {s["id"] for s in reply.custom_metadata[SOURCES_KEY]}
    assert "policies/refund-policy#who-may-approve-a-refund" in cited
    assert _checks("rewritten") == before + 1
    model.assert_complete()

    # Denied twice: the honest answer, with no section quoted under it.
    model = _to_billing(denied, "I could not find form FIN-7 in the documentation.", covered=None)
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    assert (await conversation.send(asked))[-1] == ("billing_agent", NOT_FOUND_TEXT)
    assert (await _reply(conversation)).custom_metadata[CHECK_KEY] == "not_found"
    model.assert_complete()


class CountingSearch:
    """The shipped index, counting each search by the collections it covered."""

    def __init__(self, inner: KnowledgeSearch) -> None:
        self.inner = inner
        self.searched: list[tuple[str, ...]] = []

    async def search(
        self, query: str, *, collections: Sequence[str] | None = None, limit: int = 5
    ) -> list[KnowledgeHit]:
        self.searched.append(tuple(collections or ()))
        return await self.inner.search(query, collections=collections, limit=limit)


async def test_an_agent_searches_once_per_turn_across_its_steps(db: Database) -> None:
    """billing_agent's draft promises a refund, so the review has policy_checker consulted
    and billing_agent steps again: its sections were retrieved once, for both steps."""
    search = CountingSearch(db.knowledge)
    model = ScriptedModel(
        [
            json_text("billing_agent"),  # the supervisor's decision
            json_text("billing_agent"),  # billing_agent answers itself
            "Yes, I've refunded the duplicate charge.",  # a promise, unchecked
            json_text("yes"),  # the consult check: a refund promised before the policy
            json_text({"request": "Refund a duplicate charge on INV-2291?"}),
            "ALLOWED once the bank confirms the duplicate charge.",  # policy_checker
            json_text("billing_agent"),  # billing_agent answers itself again
            GROUNDED,
            json_text("yes"),  # the coverage check: its sections answer the question
        ],
        decide_first=True,
    )
    conversation = Conversation(build_support_tree(model=model, knowledge=search), model)
    turn = await conversation.send(DUPLICATE_CHARGE)
    assert turn[-1] == ("billing_agent", GROUNDED + QUOTE)
    # billing_agent's collections in the shipped tree; policy_checker searches its own.
    assert search.searched.count(("billing", "policies")) == 1, search.searched
    assert search.searched.count(("policies",)) == 1, search.searched
    model.assert_complete()


def _supervisor(*steps: str) -> ScriptedModel:
    """The supervisor answers itself (`steps[0]`), is not held back for the policy check,
    then plays the rest of `steps`."""
    return ScriptedModel(
        [json_text("support_supervisor"), steps[0], json_text("no"), *steps[1:]],
        decide_first=True,
    )


async def _supervisor_reply(conversation: Conversation) -> Event:
    session = await conversation.runner.session_service.get_session(
        app_name="support", user_id=conversation.user_id, session_id=conversation.session_id
    )
    assert session is not None
    return [e for e in session.events if e.author == "support_supervisor" and e.text][-1]


async def test_supervisor_reply_with_an_invented_value_is_checked_against_the_index(
    db: Database,
) -> None:
    """The supervisor declares no `knowledge:`, but the tree has an index: its reply's
    values are checked against a search for the question, and the invented one is
    written again with the sections found (none here) named."""
    search = CountingSearch(db.knowledge)
    invented = "Your parcel will arrive within 3 business days."
    honest = "I'm sorry it is late. I can put you in touch with a person who can trace it."
    model = _supervisor(invented, honest)
    conversation = Conversation(build_support_tree(model=model, knowledge=search), model)
    turn = await conversation.send("My parcel was supposed to come yesterday, where is it?")
    assert turn == [("support_supervisor", honest)]
    assert search.searched == [()]  # every collection
    again = model.requests[-1]
    assert again.tools == [] and again.contents[-2].text == invented
    assert "deadline '3 business days'" in again.contents[-1].text
    assert "has nothing on this question" in again.system_instruction
    reply = await _supervisor_reply(conversation)
    assert reply.custom_metadata[CHECK_KEY] == "rewritten"
    model.assert_complete()


async def test_supervisor_reply_failing_twice_is_the_honest_answer(db: Database) -> None:
    model = _supervisor("It arrives in 3 days.", "It arrives in 2 days.")
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send("My parcel was supposed to come yesterday, where is it?")
    assert turn == [("support_supervisor", NOT_FOUND_TEXT)]
    reply = await _supervisor_reply(conversation)
    assert reply.custom_metadata == {SOURCES_KEY: [], CHECK_KEY: "not_found"}
    model.assert_complete()


async def test_supervisor_reply_stating_the_documents_values_cites_them(db: Database) -> None:
    before = REGISTRY.get(
        "support_bot_knowledge_checks_total", agent="support_supervisor", outcome="supported"
    )
    said = "A failed payment is retried after 3 days and again after 7 days."
    model = _supervisor(said)
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send("My payment failed, when is it retried?")
    assert turn == [("support_supervisor", said)]
    reply = await _supervisor_reply(conversation)
    assert reply.custom_metadata[CHECK_KEY] == "supported"
    assert "billing/billing-faq#my-payment-failed" in {
        s["id"] for s in reply.custom_metadata[SOURCES_KEY]
    }
    after = REGISTRY.get(
        "support_bot_knowledge_checks_total", agent="support_supervisor", outcome="supported"
    )
    assert after == before + 1
    model.assert_complete()


async def test_supervisor_reply_without_new_values_to_an_uncovered_question_is_unchecked(
    db: Database,
) -> None:
    """A greeting is not searched; a message the documentation has nothing relevant on is
    searched once, and a reply stating no value beyond the conversation goes out as it is."""
    search = CountingSearch(db.knowledge)
    said = "Thanks! I have noted order 55120 and will keep you posted."
    model = ScriptedModel(
        [
            json_text("support_supervisor"),
            "Hello! How can I help you today?",
            json_text("no"),
            json_text("support_supervisor"),
            said,
            json_text("no"),
        ],
        decide_first=True,
    )
    conversation = Conversation(build_support_tree(model=model, knowledge=search), model)
    assert await conversation.send("Hi there") == [
        ("support_supervisor", "Hello! How can I help you today?")
    ]
    assert await conversation.send("It is about my order 55120.") == [("support_supervisor", said)]
    assert search.searched == [()]
    assert CHECK_KEY not in (await _supervisor_reply(conversation)).custom_metadata
    model.assert_complete()


async def _streamed(model: ScriptedModel, db: Database, message: str) -> list[Event]:
    """Every event of one streamed turn of the shipped tree over the sample index."""
    service = InMemorySessionService()
    session = await service.create_session(app_name="support", user_id="u1")
    runner = Runner(
        agent=build_support_tree(model=model, knowledge=db.knowledge),
        app_name="support",
        session_service=service,
    )
    return [
        e
        async for e in runner.run_async(
            user_id="u1", session_id=session.id, message=message, streaming=True
        )
    ]


async def test_supervisor_reply_streams_only_its_sentences_before_a_value(db: Database) -> None:
    """On a model that streams (not decide-first), the supervisor's reply streams until
    the sentence holding a value; the checked reply is its complete event."""
    invented = "Sorry about the wait. Your parcel arrives within 3 business days. Thanks!"
    honest = "Sorry about the wait. A person from the team can trace your parcel."
    model = ScriptedModel([invented, honest], chunk_chars=7)
    events = await _streamed(model, db, "My parcel was supposed to come yesterday. Still nothing.")
    streamed = "".join(e.text for e in events if e.partial)
    assert streamed == "Sorry about the wait."
    [final] = [e for e in events if not e.partial and e.author == "support_supervisor"]
    assert final.text == honest
    assert final.custom_metadata[CHECK_KEY] == "rewritten"
    model.assert_complete()


UNDOCUMENTED = "Hello there. Can you please tell me what a loyalty voucher ID is?"
INVENTED_DEFINITION = "Sure! A loyalty voucher ID is the unique code printed on each voucher."


async def test_supervisor_answering_an_undocumented_question_gets_the_honest_answer(
    db: Database,
) -> None:
    """A question the documentation has nothing on, answered by the supervisor from the
    model's own knowledge with no value to check, is written again once with that named;
    a second answer is the honest one too."""
    before = _supervisor_checks("not_found")
    model = _supervisor(INVENTED_DEFINITION, "It is the code on the back of your voucher.")
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    assert await conversation.send(UNDOCUMENTED) == [("support_supervisor", NOT_FOUND_TEXT)]
    # Greedy (the tree sets no temperature), as an answer from the sections is: whether it
    # is answered, asked back or honest does not change from run to run.
    assert model.requests[1].config.temperature == 0.0
    again = model.requests[-1]
    assert again.contents[-2].text == INVENTED_DEFINITION
    assert "has nothing on it" in again.contents[-1].text
    assert "has nothing on this question" in again.system_instruction
    reply = await _supervisor_reply(conversation)
    assert reply.custom_metadata == {SOURCES_KEY: [], CHECK_KEY: "not_found"}
    assert _supervisor_checks("not_found") == before + 1
    model.assert_complete()


async def test_supervisor_answer_to_an_undocumented_question_is_not_sent_stripped(
    db: Database,
) -> None:
    """Its invented values cut out, an answer to a question nothing documents is still an
    answer from nothing: the honest answer goes out instead."""
    first = f"{INVENTED_DEFINITION} It is valid for 30 days."
    model = _supervisor(first, f"{INVENTED_DEFINITION} Each one holds 12 digits.")
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    assert await conversation.send(UNDOCUMENTED) == [("support_supervisor", NOT_FOUND_TEXT)]
    reply = await _supervisor_reply(conversation)
    assert reply.custom_metadata[CHECK_KEY] == "not_found"
    model.assert_complete()


async def test_supervisor_asking_back_on_an_undocumented_question_is_sent(db: Database) -> None:
    asked = "Where did you see that ID: on a voucher, or in an e-mail from us?"
    model = _supervisor(INVENTED_DEFINITION, asked)
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    assert await conversation.send(UNDOCUMENTED) == [("support_supervisor", asked)]
    reply = await _supervisor_reply(conversation)
    assert reply.custom_metadata[CHECK_KEY] == "rewritten"
    model.assert_complete()


async def test_supervisor_answer_to_an_undocumented_question_is_not_streamed(
    db: Database,
) -> None:
    """On a model that streams, nothing of such an answer reaches the customer before the
    check: the honest answer is the only text."""
    model = ScriptedModel([INVENTED_DEFINITION, "It is the voucher's code."], chunk_chars=7)
    events = await _streamed(model, db, UNDOCUMENTED)
    assert [e.text for e in events if e.partial] == []
    [final] = [e for e in events if not e.partial and e.author == "support_supervisor"]
    assert final.text == NOT_FOUND_TEXT
    model.assert_complete()


def _supervisor_checks(outcome: str) -> float:
    return REGISTRY.get(
        "support_bot_knowledge_checks_total", agent="support_supervisor", outcome=outcome
    )


FORGOT = "I forgot my password. How do I reset my password?"
OWN_WORDS = "No problem! You can reset it from your profile page at any time."
FROM_FAQ = 'Choose "Forgot password" on the sign-in page. The reset link is valid for 1 hour.'


async def test_supervisor_answering_a_covered_question_itself_answers_from_the_documents(
    db: Database,
) -> None:
    """The supervisor has no `knowledge:`, and keeps a question the account FAQ answers:
    its reply, which states no value to check, is written again from the FAQ's section
    (found before the step, not shown to the routing decision), cited, and counted."""
    before = REGISTRY.get(
        "support_bot_knowledge_checks_total", agent="support_supervisor", outcome="rewritten"
    )
    model = _supervisor(OWN_WORDS, FROM_FAQ)
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    assert await conversation.send(FORGOT) == [("support_supervisor", FROM_FAQ)]
    assert "Documentation" not in model.requests[0].system_instruction
    again = model.requests[-1]
    assert again.tools == [] and again.contents[-2].text == OWN_WORDS
    assert "documentation covers this question" in again.contents[-1].text
    assert "Account and sign-up FAQ (sample) › How do I reset my password?" in (
        again.system_instruction
    )
    reply = await _supervisor_reply(conversation)
    assert reply.custom_metadata[CHECK_KEY] == "rewritten"
    assert "accounts/account-faq#how-do-i-reset-my-password" in {
        s["id"] for s in reply.custom_metadata[SOURCES_KEY]
    }
    after = REGISTRY.get(
        "support_bot_knowledge_checks_total", agent="support_supervisor", outcome="rewritten"
    )
    assert after == before + 1
    model.assert_complete()

    # Written again, it says the documents do not answer: the honest answer, uncited.
    model = _supervisor(OWN_WORDS, "I could not find that in the documentation.")
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    assert await conversation.send(FORGOT) == [("support_supervisor", NOT_FOUND_TEXT)]
    model.assert_complete()


async def test_supervisor_reply_to_a_covered_question_never_streams_its_own_words(
    db: Database,
) -> None:
    """On a model that streams, a reply that will be written again from the documents
    shows nothing until the checked reply is complete."""
    model = ScriptedModel([OWN_WORDS, FROM_FAQ], chunk_chars=7)
    events = await _streamed(model, db, FORGOT)
    assert [e.text for e in events if e.partial] == []
    [final] = [e for e in events if not e.partial and e.author == "support_supervisor"]
    assert final.text == FROM_FAQ and final.custom_metadata[CHECK_KEY] == "rewritten"
    model.assert_complete()


async def test_supervisor_asking_back_on_a_covered_question_is_sent_as_it_is(
    db: Database,
) -> None:
    """The account FAQ's e-mail section shares the words of a question about a delivery
    address; the supervisor only asks for the new address, which states nothing to
    check: it goes out as it is, with no second call."""
    asked = "Sure, I can help with that. What is the new delivery address?"
    model = _supervisor(asked)
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    turn = await conversation.send("How do I change the delivery address of my order?")
    assert turn == [("support_supervisor", asked)]
    assert CHECK_KEY not in (await _supervisor_reply(conversation)).custom_metadata
    model.assert_complete()


async def test_supervisor_searches_once_per_turn_across_its_steps(db: Database) -> None:
    """The supervisor keeps the duplicate charge, promises a refund, has policy_checker
    consulted and steps again: the index was searched for its question once, and the
    final reply is checked against those sections."""
    search = CountingSearch(db.knowledge)
    model = ScriptedModel(
        [
            json_text("support_supervisor"),  # the supervisor answers itself
            "Yes, I've refunded the duplicate charge.",  # a promise, unchecked
            json_text("yes"),  # the consult check: a refund promised before the policy
            json_text({"request": "Refund a duplicate charge on INV-2291?"}),
            "ALLOWED once the bank confirms the duplicate charge.",  # policy_checker
            json_text("yes"),  # policy_checker's coverage check
            json_text("support_supervisor"),  # the supervisor answers itself again
            GROUNDED,
        ],
        decide_first=True,
    )
    conversation = Conversation(build_support_tree(model=model, knowledge=search), model)
    turn = await conversation.send(DUPLICATE_CHARGE)
    # Its values are in the policy's answer (which quotes the policy): sent as it is.
    assert turn[-1] == ("support_supervisor", GROUNDED)
    assert search.searched.count(()) == 1, search.searched
    assert search.searched.count(("policies",)) == 1, search.searched
    model.assert_complete()


UPGRADE = "If I upgrade my plan in the middle of the month, how am I charged?"
UPGRADED = "An upgrade takes effect at once and is charged pro rata for the rest of the period."


async def _after_upgrade(db: Database, *turn_two: str) -> tuple[ScriptedModel, Conversation]:
    """A conversation whose first turn asked `UPGRADE` and got `UPGRADED` from
    billing_agent, which owns the thread; `turn_two` plays billing_agent's next turn (its
    decision, its reply, the consult check and, with sections, the coverage check)."""
    model = _to_billing(UPGRADED, json_text("billing_agent"), *turn_two)
    conversation = Conversation(build_support_tree(model=model, knowledge=db.knowledge), model)
    await conversation.send(UPGRADE)
    return model, conversation


async def test_a_follow_up_is_searched_with_the_question_before_it(db: Database) -> None:
    """The follow-up "And if I downgrade later?" alone shares too few words with any
    section; read with the customer's question before it, the section on changing plans
    answers it."""
    downgraded = "A downgrade takes effect at the start of the next billing period."
    model, conversation = await _after_upgrade(db, downgraded, json_text("no"), json_text("yes"))
    [(author, text)] = await conversation.send("And if I downgrade later?")
    assert (author, text.split("\n\n")[0]) == ("billing_agent", downgraded)
    answer = model.requests[-3]
    assert "Billing FAQ (sample) › Changing plans" in answer.system_instruction
    reply = await _reply(conversation)
    assert reply.custom_metadata[CHECK_KEY] == "supported"
    assert "billing/billing-faq#changing-plans" in {
        s["id"] for s in reply.custom_metadata[SOURCES_KEY]
    }
    model.assert_complete()


async def test_a_follow_up_on_something_else_is_still_answered_honestly(db: Database) -> None:
    """Read with the question before it, a follow-up about something no section holds
    still finds nothing relevant: the honest answer."""
    model, conversation = await _after_upgrade(db, "Yes, Bitcoin works.", json_text("no"))
    assert await conversation.send("And can I pay with Bitcoin?") == [
        ("billing_agent", NOT_FOUND_TEXT)
    ]
    model.assert_complete()


async def test_a_follow_up_keeps_only_sections_holding_its_own_words(db: Database) -> None:
    """Read with the question before it, "What about the monthly price?" also finds the
    section on changing plans, by the earlier question's words alone; that one is not
    given to the step (it holds neither "monthly" nor "price")."""
    monthly = "Monthly plans are charged on the same day each month as the first payment."
    model, conversation = await _after_upgrade(db, monthly, json_text("no"), json_text("yes"))
    [(_, text)] = await conversation.send("What about the monthly price?")
    assert text.startswith(monthly)
    answer = model.requests[-3]
    assert "Billing FAQ (sample) › When is my card charged?" in answer.system_instruction
    assert "Changing plans" not in answer.system_instruction
    model.assert_complete()
