"""Closing a JSON object that was cut off at its output cap.

A small model writing a tool's arguments sometimes runs on inside a string (it recites
its instructions, or repeats itself) until the call's `max_tokens` stops it: the text is
then a JSON object with an unterminated string, and no parser accepts it. What was
written before the cut is still the arguments the model meant, so the object is closed
where it stopped: the open string ends, a key left without a value is dropped, and the
open arrays and objects are closed, innermost first. Nothing is invented; the caller
checks the result against the tool's required fields.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["close_truncated_object"]


def close_truncated_object(text: str) -> dict[str, Any] | None:
    """The JSON object `text` starts (at its first `{`), closed where it was cut off;
    None when there is no object or it cannot be closed into valid JSON."""
    start = text.find("{")
    if start == -1:
        return None
    body = text[start:]
    stack: list[str] = []
    in_string = False
    escaped = False
    for index, char in enumerate(body):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]":
            if not stack or stack.pop() != char:
                return None
            if not stack:  # the object is complete: nothing was cut
                return _object(body[: index + 1])
    if in_string:
        if escaped:  # a lone backslash at the cut escapes nothing
            body = body[:-1]
        body += '"'
    return _object(_without_dangling_tail(body) + "".join(reversed(stack)))


def _without_dangling_tail(body: str) -> str:
    """`body` without a trailing comma, or a key whose value was never started."""
    trimmed = body.rstrip()
    while trimmed.endswith(","):
        trimmed = trimmed[:-1].rstrip()
    if trimmed.endswith(":"):
        key_end = trimmed[:-1].rstrip()
        key_start = _string_start(key_end)
        if key_start is not None:
            trimmed = key_end[:key_start].rstrip()
            while trimmed.endswith(","):
                trimmed = trimmed[:-1].rstrip()
    elif trimmed.endswith('"') and _is_key(trimmed):
        key_start = _string_start(trimmed)
        if key_start is not None:
            trimmed = trimmed[:key_start].rstrip().rstrip(",").rstrip()
    return trimmed


def _string_start(text: str) -> int | None:
    """Where the JSON string that `text` ends with opens."""
    if not text.endswith('"'):
        return None
    index = len(text) - 2
    while index >= 0:
        if text[index] == '"':
            backslashes = 0
            probe = index - 1
            while probe >= 0 and text[probe] == "\\":
                backslashes += 1
                probe -= 1
            if backslashes % 2 == 0:
                return index
        index -= 1
    return None


def _is_key(text: str) -> bool:
    """Whether the string `text` ends with stands where an object key goes (after `{`
    or a comma inside an object), so it still lacks its value."""
    start = _string_start(text)
    if start is None:
        return False
    before = text[:start].rstrip()
    return before.endswith("{") or (before.endswith(",") and _innermost(before) == "{")


def _innermost(text: str) -> str | None:
    """The innermost open bracket at the end of `text` (outside strings)."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append(char)
        elif char in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else None


def _object(candidate: str) -> dict[str, Any] | None:
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
