"""Untrusted text shown to a model as data: fenced transcripts and quoted context.

Whatever users, tools or earlier models wrote may contain fence markers or lines that
look like a transcript's own `[e9] agent:` lines. Fencing breaks the markers up and
indents continuation lines; quoting prefixes every line with `> `, so nothing inside
can read as the conversation's structure or as an instruction.
"""

from __future__ import annotations

CONTINUATION = "\n    "


def defuse_fences(text: str) -> str:
    """`text` with `<<<` and `>>>` broken up, so it cannot open or close a fence."""
    while "<<<" in text or ">>>" in text:
        text = text.replace("<<<", "<< <").replace(">>>", "> >>")
    return text


def fenced_line(head: str, text: str) -> str:
    """One transcript line: `head: text`, continuation lines indented, markers broken."""
    body = defuse_fences(text).replace("\r", "").replace("\n", CONTINUATION)
    return f"{head}: {body}"


def quoted(text: str) -> str:
    """`text` as a quotation: every line prefixed with `> `."""
    return "\n".join(f"> {line}" for line in text.replace("\r", "").split("\n"))
