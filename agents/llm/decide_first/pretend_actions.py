"""Pretend actions: replies that say an agent hands off, escalates or checks something.

A small model asked to answer often writes "I will transfer your issue to the
tech_support agent." instead of transferring, or recites its own instructions ("call
policy_checker first"). Such a reply must never reach the user: `find_pretend_action`
recognises it so the caller can turn it into the real action or ask again.

What is recognised is generic, not a routing rule: the names of the agent's own transfer
targets and tools, and of the transfer tool itself (internal names a customer reply has
no reason to use), first-person claims of a hand-off or check, a tool call written out
as JSON text, announcements of work the reply does not do ("I will proceed to review the
case", "let me check", "I'll look into it"), runs of words copied from the agent's
instruction, and template placeholders for a detail the model does not have ("contact
us at [support email address]", "[Your Name]"): the customer would read them as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agents.llm.transfer import TRANSFER_TOOL

PretendKind = Literal["transfer", "tool", "claim", "recital", "placeholder"]

# First-person claims of doing something the reply cannot do by itself being written.
_CLAIM = re.compile(
    r"\b(?:i(?:'ll| will| am going to|'m going to| am| have|'ve| shall)|let me|we(?:'ll| will| are"
    r" going to|'re going to| have|'ve)|i'm)\s+(?:now\s+|just\s+|immediately\s+|quickly\s+)?"
    r"(?:transferr?(?:ing|ed)?|transfer|forward(?:ing|ed)?|escalat(?:e|ing|ed)|hand(?:ing|ed)?"
    r"\s+(?:you|this|it|your)|pass(?:ing|ed)?\s+(?:you|this|it|your)|connect(?:ing|ed)?\s+you"
    r"|rout(?:e|ing|ed)|refer(?:ring|red)?\s+(?:you|this|it|your)|consult(?:ing|ed)?"
    r"|check(?:ing|ed)?\s+(?:with|against)|verify(?:ing)?\s+with)\b",
    re.IGNORECASE,
)
# Announced work the reply itself does not do ("I will proceed to review the case", "let me
# check", "I'll look into it"): said in a reply, it only ever happens as a real action in
# the same turn, so the announcement alone is a pretence.
_ANNOUNCED = re.compile(
    r"\b(?:i(?:'ll| will| shall| am going to|'m going to| am about to|'m about to)|let me"
    r"|allow me to|while i|we(?:'ll| will| are going to|'re going to))\s+"
    r"(?:now\s+|just\s+|immediately\s+|quickly\s+|first\s+|go\s+ahead\s+and\s+"
    r"|proceed\s+to\s+|be\s+)?"
    r"(?:proceed(?:ing)?|check(?:ing)?|look(?:ing)?\s+(?:into|up|at|over)|review(?:ing)?"
    r"|investigat(?:e|ing)|verify(?:ing)?|confirm(?:ing)?|examin(?:e|ing)|research(?:ing)?"
    r"|find(?:ing)?\s+out|contact(?:ing)?|reach(?:ing)?\s+out|get(?:ting)?\s+back"
    r"|follow(?:ing)?\s+up|rais(?:e|ing)\s+a|open(?:ing)?\s+a|creat(?:e|ing)\s+a"
    r"|fil(?:e|ing)\s+a|log(?:ging)?\s+a|notify(?:ing)?)\b",
    re.IGNORECASE,
)
# A bracketed stand-in for a detail ("[support email address]", "[Your Name]", "[insert
# link]"): a word of the kind templates leave blank inside square brackets, on one line, not
# a Markdown link's text ("[the guide](https://…)"); a UI label ("[Save]") names none.
_PLACEHOLDER = re.compile(
    r"\[(?=[^\]\n]{2,60}\])(?=[^\]\n]*\b(?:your|insert|name|e-?mail|address|phone|number|link"
    r"|url|website|date|time|company|customer|agent|here|details?|amount|id)\b)[^\]\n]+\](?!\()",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9']+")
_CALL_OPENING = re.compile(r'\{\s*"(?:tool|name)"\s*:\s*"([^"]+)"')
RECITAL_WORDS = 12
"""A reply that repeats this many consecutive words of the instruction recites it."""


@dataclass(frozen=True)
class PretendAction:
    """What a reply pretended: a `transfer` to `name`, a `tool` call of `name`, a hand-off
    `claim` naming no one, a `recital` of the instruction, or a `placeholder` (`name`)
    standing in for a detail it does not have."""

    kind: PretendKind
    name: str | None = None


def find_pretend_action(
    text: str,
    *,
    targets: Sequence[str],
    tools: Sequence[str],
    instruction: str = "",
    others: Sequence[str] = (),
) -> PretendAction | None:
    """The pretend action in reply `text`, or None for a reply that can be shown.

    A named target or tool wins over a bare claim, so that the caller can act on it. An
    internal name ("tech_support") counts anywhere; a plain word ("repairs") only in a
    reply that claims a hand-off. `others` are the tree's other internal names (agents
    and tools this agent cannot reach now, the agent that handed over to it, say): a
    reply naming one is a `claim`, with no action to turn it into.
    """
    if not text.strip():
        return None
    shaped = _tool_call_shape(text)
    if shaped is not None:
        name, target = shaped
        if name in tools:
            return PretendAction("tool", name)
        if target in targets:
            return PretendAction("transfer", target)
        return PretendAction("claim")
    named = [("transfer", n) for n in targets] + [("tool", n) for n in tools]
    for kind, name in named:
        if _mentions(text, name):
            return PretendAction(kind, name)  # type: ignore[arg-type]
    if any(_mentions(text, name) for name in others):
        return PretendAction("claim")
    if _word(text, TRANSFER_TOOL):
        return PretendAction("claim")
    if _CLAIM.search(text) or _ANNOUNCED.search(text):
        for kind, name in named:
            if _word(text, name):
                return PretendAction(kind, name)  # type: ignore[arg-type]
        return PretendAction("claim")
    if instruction and _recites(text, instruction):
        return PretendAction("recital")
    if blank := _PLACEHOLDER.search(text):
        return PretendAction("placeholder", blank.group(0))
    return None


def hands_off(text: str) -> bool:
    """Whether `text` claims a hand-off, an escalation or a consultation (a first-person
    claim, the transfer tool named, or a tool call written as text): the agent meant
    another agent or tool to act. Announced work ("let me check") and recitals are not
    hand-offs."""
    shaped = _tool_call_shape(text) is not None
    return shaped or bool(_CLAIM.search(text)) or _word(text, TRANSFER_TOOL)


_SENTENCE = re.compile(r"((?<=[.!?])[ \t]+|[ \t]*\n\s*)")
"""Between two sentences: the spaces after a sentence's end, or a line break (kept, so a
cut reply keeps its paragraphs, list items and quoted lines)."""


def without_pretence(
    text: str,
    *,
    targets: Sequence[str],
    tools: Sequence[str],
    instruction: str = "",
    others: Sequence[str] = (),
) -> str:
    """`text` without the sentences that pretend an action ("" if nothing else is left):
    the last resort of an agent that has no action to turn the pretence into. The kept
    sentences keep their layout: two of them are joined by the widest break that stood
    between them (a blank line, a line break or a space)."""
    if _tool_call_shape(text) is not None:
        return ""
    kept: list[str] = []
    gap = ""
    for index, piece in enumerate(_SENTENCE.split(text.strip())):
        if index % 2:
            gap = max(gap, piece, key=lambda g: g.count("\n"))
            continue
        sentence = piece.strip()
        if not sentence or (
            find_pretend_action(
                sentence, targets=targets, tools=tools, instruction=instruction, others=others
            )
            is not None
        ):
            continue
        if kept:
            kept.append("\n" * min(gap.count("\n"), 2) or " ")
        kept.append(sentence)
        gap = ""
    return "".join(kept)


def written_call(text: str) -> str | None:
    """The tool a reply written out as a tool call names (`{"tool": "x", ...}`), if it is
    one."""
    shaped = _tool_call_shape(text)
    return shaped[0] if shaped is not None else None


def _tool_call_shape(text: str) -> tuple[str, str | None] | None:
    """A reply that is a prompted tool call written as text (`{"tool": "x", "args": {...}}`,
    fenced or not): the tool's name, and a transfer's target. A small model asked for a
    plain reply sometimes imitates the tool format it has seen; no customer reads JSON."""
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    if not body.startswith("{"):
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError:
        # Broken JSON (a small model leaves inner quotes unescaped) that opens as a call.
        opened = _CALL_OPENING.match(body)
        return (opened.group(1), None) if opened else None
    if not isinstance(value, dict):
        return None
    name = value.get("tool") or (value.get("name") if "args" in value else None)
    if not isinstance(name, str) or not name:
        return None
    args = value.get("args")
    target = args.get("agent_name") if name == TRANSFER_TOOL and isinstance(args, dict) else None
    return name, target if isinstance(target, str) else None


def _mentions(text: str, name: str) -> bool:
    """`name` as a word; a multi-word identifier also with spaces ("tech support agent")."""
    variants = {name}
    if "_" in name:
        variants.add(name.replace("_", " "))
    elif len(name) < 4 or name.isalpha():
        # A plain word ("billing", "diagnose") is ordinary language, not an internal name.
        return bool(re.search(rf"`{re.escape(name)}`", text))
    return any(_word(text, v) for v in variants)


def _word(text: str, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


def _recites(text: str, instruction: str) -> bool:
    words = _WORD.findall(instruction.lower())
    if len(words) < RECITAL_WORDS:
        return False
    grams = {tuple(words[i : i + RECITAL_WORDS]) for i in range(len(words) - RECITAL_WORDS + 1)}
    said = _WORD.findall(text.lower())
    return any(
        tuple(said[i : i + RECITAL_WORDS]) in grams for i in range(len(said) - RECITAL_WORDS + 1)
    )
