"""The check of a knowledge-grounded reply, like the digest's: every amount, deadline,
percentage, error code and form or policy name it states must be stated by a retrieved
section or by the conversation (`agents.knowledge.values`).

A reply that fails is written again once with its problems named; a second failure is
sent with the sentences that hold unsupported values removed, or, when nothing would be
left, as the honest `NOT_FOUND_TEXT`. Never as it was. The outcome is one of `OUTCOMES`,
recorded on the reply's event (`CHECK_KEY`) and counted.

A reply saying the documentation does not answer is the honest answer, unless a section
states a code the customer asked about (`documented_codes`): then it is written again
once, as a failing reply is. It is never sent with a section quoted under it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agents.knowledge.values import Value, states, values
from agents.metrics import REGISTRY

CheckOutcome = Literal["supported", "rewritten", "stripped", "not_found"]
OUTCOMES: tuple[CheckOutcome, ...] = ("supported", "rewritten", "stripped", "not_found")
SOURCES_KEY = "knowledge_sources"
"""The reply event's `custom_metadata` key for the sections it cites."""
CHECK_KEY = "knowledge_check"
"""The reply event's `custom_metadata` key for the check's outcome (one of `OUTCOMES`)."""

NOT_FOUND_TEXT = (
    "I couldn't find that in our documentation, so I won't guess. If you'd like, I can "
    "hand this conversation to a person on the support team who can look into it."
)
FROM_DOCUMENTS = (
    "That reply cannot be sent: the support team's documentation covers this question, "
    "and the reply is not taken from it. Write the reply again from the documentation "
    "above, using only what it says."
)
"""Why a reply written without the documentation that covers its question is written
again (an agent with no `knowledge:` of its own, the supervisor answering itself)."""
NOTHING_DOCUMENTED = (
    "That reply cannot be sent: it answers the customer's question, and the support "
    "team's documentation has nothing on it. Do not answer it from your own knowledge: "
    "say you could not find it in the documentation, or ask the customer what you need."
)
"""Why an answer to a question the documentation does not cover is written again (an
agent with no `knowledge:` of its own, the supervisor answering itself)."""
_INTERROGATIVE = re.compile(
    r"^(?:what|how|why|when|where|who|which|can|could|do|does|did|is|are|was|will|would|"
    r"should|may|might)\b",
    re.IGNORECASE,
)
# A question back may come with this many words around it ("I'm sorry to hear that.").
ASIDE_WORDS = 6
# A stripped reply shorter than this says nothing useful: the honest answer is sent.
MIN_STRIPPED_WORDS = 6

REGISTRY.describe(
    "support_bot_knowledge_checks_total",
    "counter",
    "Knowledge-grounded replies by the outcome of their check, by agent",
)

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+(?=\s|$)|\n|$)|[.!?\n]")
# A reply admitting the documentation does not answer: "I could not find that in the
# documentation", "the sections provided do not mention ...", "there is no specific
# information about ...", "the code is not listed in the troubleshooting guide".
_DOCS = r"(?:documentation|docs|sections?|documents?|guides?|FAQ|help (?:center|centre))"
_NOT_FOUND = re.compile(
    r"(?i)\b(?:could ?n[o']?t|can ?n[o']?t|cannot|unable to|did ?n[o']?t|do ?n[o']?t) "
    rf"(?:find|locate|see)\b[^.!?\n]{{0,80}}\b(?:{_DOCS}|information)\b"
    rf"|\b{_DOCS}(?: [\w-]+){{0,3}} (?:do(?:es)? ?n[o']?t|don't|doesn't) "
    r"(?:say|mention|cover|contain|answer|include|provide|list|specify|address|describe)\b"
    r"|\bno (?:specific |relevant |further |detailed )?(?:information|details|mention) "
    r"(?:about|on|of|regarding)\b"
    r"|\b(?:do ?n[o']?t|don't) have (?:any )?(?:specific |relevant )?information\b"
    r"|\b(?:is|are) ?n[o']?t (?:listed|mentioned|covered|included|described|found) "
    rf"(?:in|by) (?:the|our|this|these|any)\b[^.!?\n]{{0,40}}\b{_DOCS}\b"
)
# A decimal point or a dotted code is not a sentence end.
_PROTECTED_DOT = re.compile(r"(?<=\d)\.(?=\d)")


def says_not_found(reply: str) -> bool:
    """Whether `reply` says the documentation does not answer the question (as it is told
    to): it is then sent as the honest answer, with its offer of a person."""
    return _NOT_FOUND.search(reply) is not None


def asks_only(reply: str) -> bool:
    """Whether `reply` only asks the customer something ("Sure. What is the new delivery
    address?"): a question back states nothing a document could support, so it goes out
    as it is. At most `ASIDE_WORDS` words outside its questions."""
    pieces = _sentences(reply)
    asked = [p for p in pieces if p.endswith("?")]
    said = sum(len(p.split()) for p in pieces if p and not p.endswith("?"))
    return bool(asked) and said <= ASIDE_WORDS


def asks_question(message: str) -> bool:
    """Whether a customer's message asks something: a sentence of it ends with "?" or
    starts with a question word ("Can you tell me what a voucher ID is")."""
    return any(p.endswith("?") or _INTERROGATIVE.match(p) for p in _sentences(message))


def _sentences(text: str) -> list[str]:
    """`text`'s sentences, stripped (a dot inside a value does not end one)."""
    return [p.strip() for p in _SENTENCE.findall(_PROTECTED_DOT.sub("\0", text))]


def unsupported(reply: str, evidence: Sequence[str]) -> list[Value]:
    """The values of `reply` that no text of `evidence` states."""
    return [v for v in values(reply) if not any(states(text, v) for text in evidence)]


def documented_codes(question: str, evidence: Sequence[str]) -> list[Value]:
    """The codes the customer asked about (an error code, a numbered form) that the
    sections state: a reply saying the documentation does not cover them overlooked it.
    Words alone are no such evidence: sections sharing them may still not answer."""
    asked = [v for v in values(question) if v.kind == "code" or _numbered_name(v)]
    held = [v for v in asked if any(states(text, v) for text in evidence)]
    # "form FIN-7" holds the code "FIN-7": each is named once.
    return [v for v in held if not any(v.text in w.text and v != w for w in held)]


def _numbered_name(value: Value) -> bool:
    return value.kind == "name" and any(c.isdigit() for c in value.text)


def overlooked_text(found: Sequence[Value]) -> str:
    """The problem of a "not found" reply to a question whose codes the sections state."""
    listed = ", ".join(repr(v.text) for v in found)
    return (
        "That reply cannot be sent: the documentation sections above do cover "
        f"{listed}. Write the reply again from what they say about it, using only what "
        "they say."
    )


def problems_text(found: Sequence[Value]) -> str:
    """The problems of a failing reply, named for the model's second attempt."""
    listed = "; ".join(f"{v.kind} {v.text!r}" for v in found)
    return (
        "That reply cannot be sent: it states values that neither the documentation "
        f"sections nor the conversation state ({listed}). Write the reply again, using only "
        "what the sections say. Leave out anything they do not say."
    )


def stripped(reply: str, found: Sequence[Value]) -> str:
    """`reply` without its sentences that hold any of `found` ("" when too little is left)."""
    masked = _PROTECTED_DOT.sub("\0", reply)
    kept: list[str] = []
    for piece in _SENTENCE.findall(masked):
        sentence = piece.replace("\0", ".")
        if any(v in values(sentence) for v in found):
            continue
        kept.append(sentence)
    text = re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip()
    return text if len(text.split()) >= MIN_STRIPPED_WORDS else ""


def count(agent: str, outcome: CheckOutcome) -> None:
    """Count one checked reply on `/metrics`."""
    REGISTRY.inc("support_bot_knowledge_checks_total", agent=agent, outcome=outcome)


def reply_sources(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The sections a reply event cites (`SOURCES_KEY` of its `custom_metadata`), each
    with a string `id` and `title`; malformed entries are skipped."""
    found = metadata.get(SOURCES_KEY)
    if not isinstance(found, list):
        return []
    return [
        dict(s)
        for s in found
        if isinstance(s, Mapping)
        and isinstance(s.get("id"), str)
        and isinstance(s.get("title"), str)
    ]


def source_label(source: Mapping[str, Any]) -> str:
    """A cited section as a person reads it: "Title › heading" (the title alone for text
    before the first heading)."""
    heading = source.get("heading")
    title = str(source["title"])
    return f"{title} › {heading}" if isinstance(heading, str) and heading else title
