"""The checkable values of a reply: amounts, deadlines, percentages, error codes, and
form or policy names, and whether a text states each of them.

A reply grounded in the team's documents may state such a value only when a retrieved
section or the conversation states it too (`agents.knowledge.reply_check`). Amounts,
deadlines and percentages are compared by number ("$49" is "49.00 USD"; "10 business
days" is in "5 to 10 business days"), codes and names by word, case ignored.

The digest's validator extracts its values in `agents.summary.entities`; the runtime may
not import the summary agent, and a reply's values are a different set (deadlines,
percentages, codes, names and any other number but a list item's), so they are found
here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ValueKind = Literal["amount", "deadline", "percentage", "code", "name", "number"]

_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_CURRENCY = r"USD|EUR|GBP|CHF|CAD|AUD|dollars?|euros?|pounds?"
_AMOUNT = re.compile(
    rf"[$€£]\s?(?P<a>{_NUMBER})|(?P<b>{_NUMBER})\s?(?:{_CURRENCY})\b", re.IGNORECASE
)
_UNITS = r"(?:business |working |calendar )?(?:days?|weeks?|months?|years?|hours?|minutes?)"
_DEADLINE = re.compile(
    rf"\b(?P<n>{_NUMBER})(?:\s*(?:to|-|–|or)\s*(?P<m>{_NUMBER}))?[\s-]+(?P<unit>{_UNITS})\b",
    re.IGNORECASE,
)
_PERCENT = re.compile(rf"(?P<n>{_NUMBER})\s?(?:%|per ?cent\b)", re.IGNORECASE)
_CODES = (
    re.compile(r"\b0x[0-9a-f]{4,}\b", re.IGNORECASE),
    re.compile(r"\b(?:HTTP|error|status)\s+[1-5]\d\d\b", re.IGNORECASE),
    re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"),
    re.compile(r"\b[A-Z]{2,}-\d+[A-Z]?\b"),
)
_FORM = re.compile(r"\bform\s+(?P<name>[A-Z0-9][\w-]*\d[\w-]*|[A-Z][A-Z0-9-]+)\b", re.IGNORECASE)
_POLICY = re.compile(r"\b(?P<name>(?:[A-Z][\w-]*\s+){1,3})(?:policy|Policy|POLICY)\b")
# Any other number ("up to 3 plates", "age 16"), unless it numbers a list item ("2. Open").
_BARE_NUMBER = re.compile(rf"(?<![\w.,$€£-])(?:{_NUMBER})(?![\w%]|[.,]\d)")
_LIST_MARKER = re.compile(r"^[ \t>*-]*\d+[.)](?=\s)", re.MULTILINE)
# Capitalised words that start a sentence rather than name a policy ("Our policy").
_NOT_NAMES = frozenset({"our", "the", "this", "that", "your", "a", "an", "per", "under", "by"})


@dataclass(frozen=True)
class Value:
    """One checkable value as the reply writes it, and what it is."""

    kind: ValueKind
    text: str


def values(text: str) -> list[Value]:
    """The checkable values in `text`, in order of appearance, each once."""
    found: list[tuple[int, Value]] = []
    for match in _AMOUNT.finditer(text):
        found.append((match.start(), Value("amount", match.group().strip())))
    for match in _DEADLINE.finditer(text):
        found.append((match.start(), Value("deadline", match.group().strip())))
    for match in _PERCENT.finditer(text):
        found.append((match.start(), Value("percentage", match.group().strip())))
    for regex in _CODES:
        for match in regex.finditer(text):
            found.append((match.start(), Value("code", match.group())))
    for match in _FORM.finditer(text):
        found.append((match.start(), Value("name", match.group().strip())))
    for match in _POLICY.finditer(text):
        name = _policy_name(match.group("name"))
        if name:
            found.append((match.start(), Value("name", f"{name} policy")))
    taken = [(start, start + len(value.text)) for start, value in found]
    markers = {
        m.end() - 2 if m.group().endswith(")") else m.end() - 1 for m in _LIST_MARKER.finditer(text)
    }
    for match in _BARE_NUMBER.finditer(text):
        inside = any(a <= match.start() < b for a, b in taken)
        if not inside and match.end() not in markers and match.end() - 1 not in markers:
            found.append((match.start(), Value("number", match.group())))
    seen: set[Value] = set()
    ordered: list[Value] = []
    for _, value in sorted(found, key=lambda item: item[0]):
        if value not in seen:
            seen.add(value)
            ordered.append(value)
    return ordered


def states(text: str, value: Value) -> bool:
    """Whether `text` states `value` (by number for amounts, deadlines and percentages)."""
    if value.kind == "amount":
        wanted = _numbers(_AMOUNT, value.text)
        return bool(wanted) and wanted <= _all_numbers(text)
    if value.kind == "deadline":
        return _deadlines(value.text) <= _deadlines(text)
    if value.kind == "number":
        return _number(value.text) in _all_numbers(text)
    if value.kind == "percentage":
        return _numbers(_PERCENT, value.text) <= _numbers(_PERCENT, text)
    if value.kind == "code":
        return _has_words(text, _code_core(value.text))
    if value.kind == "name" and value.text.casefold().startswith("form "):
        return _has_words(text, value.text.split(None, 1)[1])
    return _has_words(text, value.text)


def _policy_name(words: str) -> str:
    parts = words.split()
    while parts and parts[0].casefold() in _NOT_NAMES:
        parts = parts[1:]
    return " ".join(parts)


def _code_core(code: str) -> str:
    """The code itself: "HTTP 401" and "error 401" both come down to "401"."""
    parts = code.split()
    return parts[-1] if len(parts) == 2 and parts[-1].isdigit() else code


def _has_words(text: str, phrase: str) -> bool:
    pattern = r"\s+".join(re.escape(word) for word in phrase.split())
    return re.search(rf"(?<![\w-]){pattern}(?![\w-])", text, re.IGNORECASE) is not None


def _number(raw: str) -> str:
    number = raw.replace(",", "")
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    return number or "0"


def _numbers(regex: re.Pattern[str], text: str) -> set[str]:
    found: set[str] = set()
    for match in regex.finditer(text):
        raw = next((g for g in match.groups() if g), None)
        if raw is not None:
            found.add(_number(raw))
    return found


def _all_numbers(text: str) -> set[str]:
    return {_number(raw) for raw in re.findall(_NUMBER, text)}


def _deadlines(text: str) -> set[tuple[str, str]]:
    """(number, unit) pairs; a range gives both ends, and "business days" counts as days."""
    found: set[tuple[str, str]] = set()
    for match in _DEADLINE.finditer(text):
        unit = match.group("unit").split()[-1].casefold().rstrip("s")
        for raw in (match.group("n"), match.group("m")):
            if raw:
                found.add((_number(raw), unit))
    return found
