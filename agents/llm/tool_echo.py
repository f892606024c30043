"""Tool echoes: a reply that only repeats what a tool answered.

A small model that consulted a tool this turn often sends the tool's answer on as its
whole reply: `policy_checker` answers "DENIED: duplicate charges are refunded once" and
the customer reads "DENIED". The tool's answer is for the agent, not the customer, so such
a reply is asked for again, once, as a reply to the customer (`agents.llm.decision`).

An echo is a reply whose words are the first words of a tool result of the current turn
(the results after the last user message), and fewer than all of them, case and
punctuation aside: the verdict without its reason. A reply that says more than the
result, says it in other words, or passes a whole result on (a tool's "Done.") is no echo.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from agents.models.base import Content

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def turn_results(contents: Sequence[Content]) -> list[str]:
    """The text of every tool result since the last user message of `contents`."""
    results: list[str] = []
    for content in reversed(contents):
        responses = [p.function_response for p in content.parts if p.function_response]
        if responses:
            results += [s for r in responses for s in _strings(r.response)]
        elif content.role == "user" and content.text.strip():
            break
    return results


def echoed_result(reply: str, contents: Sequence[Content]) -> str | None:
    """The tool result whose start, and only its start, `reply` repeats, or None."""
    said = _words(reply)
    if not said:
        return None
    for result in turn_results(contents):
        words = _words(result)
        if len(said) < len(words) and words[: len(said)] == said:
            return result
    return None
