"""Every form of link the model may write, found so that each can be shown honestly.

The model may write an inline link (`[label](url)`, with a title, nested brackets in
the label, a label broken across a line), a reference link (`[label][ref]` with a
`[ref]: url` definition elsewhere), an autolink (`<url>`) or Slack's own `<url|label>`.
`find_links` finds them all with a bounded scanner (no Markdown parser is a
dependency); `honest_label` decides what a link may say; `open_link_start` tells a
stream where an unfinished one begins, so it is held back until it is whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

# A link's label or destination longer than this is not a link (and is not held back).
MAX_LINK = 1_000
# Something a reader takes for a host name: dotted labels ending in a letter TLD.
_HOSTLIKE = re.compile(
    r"(?<![\w@-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63})(?![\w-])", re.I
)
_OPENER = re.compile(r"[\[<]")
_TITLE = r"""(?:"[^"]{0,1000}"|'[^']{0,1000}'|\([^()]{0,1000}\))"""
# What follows `]` in an inline link: `(url)`, `(<url>)`, `(url "title")`.
_INLINE_TAIL = re.compile(
    r"\([ \t]*\n?[ \t]*(?:<([^<>\n]{1,1000})>|((?:[^\s()<>]|\([^\s()<>]*\)){1,1000}))"
    rf"(?:\s+{_TITLE})?\s*\)"
)
_REF_TAIL = re.compile(r"\[([^\[\]\n]{0,999})\]")
_DEFINITION = re.compile(
    rf"[ ]{{0,3}}\[([^\[\]\n]{{1,999}})\]:[ \t]*\n?[ \t]*<?([^\s<>]{{1,1000}})>?"
    rf"(?:[ \t]+{_TITLE})?[ \t]*(?=\n|\Z)"
)
_ANGLE = re.compile(r"<(https?://[^\s<>|]{1,1000})(?:\|([^<>\n]{1,1000}))?>", re.I)
_ANGLE_OPEN = re.compile(r"<https?://[^\s<>|]*(?:\|[^<>\n]*)?", re.I)


@dataclass(frozen=True)
class Link:
    """One link found in text: `text[start:end]`. `url` is None for a reference link
    (`ref` names it) and `label` is None for an autolink; `definition` marks a
    `[ref]: url` line, which is not shown as a link itself."""

    start: int
    end: int
    label: str | None
    url: str | None
    ref: str | None = None
    definition: bool = False


def is_web_url(url: str | None) -> bool:
    """Whether `url` is an http(s) URL, the only kind ever shown as a link."""
    return url is not None and url.casefold().startswith(("http://", "https://"))


def reference_key(ref: str) -> str:
    """A reference label as Markdown matches it: case and runs of spaces ignored."""
    return " ".join(ref.split()).casefold()


def find_links(text: str) -> list[Link]:
    """Every link in `text`, in order, none overlapping."""
    links: list[Link] = []
    at = 0
    while match := _OPENER.search(text, at):
        start = match.start()
        link = _angle(text, start) if match.group() == "<" else _bracketed(text, start)
        if link is None:
            at = start + 1
            continue
        links.append(link)
        at = link.end
    return links


def definitions(links: list[Link]) -> dict[str, str]:
    """The reference definitions among `links`: key -> URL (the first one wins)."""
    found: dict[str, str] = {}
    for link in links:
        if link.definition and link.ref is not None and link.url is not None:
            found.setdefault(link.ref, link.url)
    return found


def open_link_start(text: str) -> int | None:
    """Where a link that is still unfinished at the end of `text` begins, if any: a
    stream must hold the text from there until the link closes (or cannot be one)."""
    window = max(0, len(text) - MAX_LINK)
    # A definition is whole only once its line ends (a title may still follow).
    spans = [
        (link.start, link.end)
        for link in find_links(text)
        if not (link.definition and link.end == len(text))
    ]
    for match in _OPENER.finditer(text, window):
        start = match.start()
        if any(s <= start < e for s, e in spans):
            continue
        if _may_grow(text, start):
            return start
    return None


def honest_label(label: str, url: str) -> str:
    """`label`, unless it names a host other than `url`'s: then the real URL is shown, so a
    link can never read as one site while leading to another."""
    host = (urlsplit(url).hostname or "").casefold()
    for named in _HOSTLIKE.findall(" ".join(label.split())):
        named = named.casefold().rstrip(".")
        if named != host and not host.endswith("." + named):
            return url
    return label


def _angle(text: str, start: int) -> Link | None:
    match = _ANGLE.match(text, start)
    if match is None:
        return None
    return Link(start, match.end(), match.group(2), match.group(1))


def _bracketed(text: str, start: int) -> Link | None:
    line_start = text.rfind("\n", 0, start) + 1
    if not text[line_start:start].strip(" "):
        definition = _DEFINITION.match(text, line_start)
        if definition is not None and definition.start(1) == start + 1:
            ref, url = definition.group(1), definition.group(2)
            return Link(start, definition.end(), ref, url, reference_key(ref), definition=True)
    close = _label_end(text, start)
    if close is None:
        return None
    label = text[start + 1 : close]
    inline = _INLINE_TAIL.match(text, close + 1)
    if inline is not None:
        url = inline.group(1) or inline.group(2)
        return Link(start, inline.end(), label, url) if is_web_url(url) else None
    ref = _REF_TAIL.match(text, close + 1)
    if ref is not None and "\n" not in label:
        key = reference_key(ref.group(1) or label)
        return Link(start, ref.end(), label, None, key) if key else None
    return None


def _label_end(text: str, start: int) -> int | None:
    """The index of the `]` closing the `[` at `start` (brackets nest), or None."""
    depth = 0
    for at in range(start, min(len(text), start + MAX_LINK)):
        char = text[at]
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return at
        elif char == "\n" and text.startswith("\n", at + 1):
            return None  # a blank line ends any label
    return None


def _may_grow(text: str, start: int) -> bool:
    """Whether `text[start:]` may still become a link as more text arrives."""
    tail = text[start:]
    if "\n\n" in tail:
        return False
    if tail.startswith("<"):
        head = tail[1:].casefold()
        return (
            "https://".startswith(head)
            or "http://".startswith(head)
            or bool(_ANGLE_OPEN.fullmatch(tail))
        )
    close = _label_end(text, start)
    if close is None:
        return True
    rest = text[close + 1 :]
    if not rest:
        return True
    if rest[0] == "(":
        unclosed = rest.count("(") > rest.count(")") or rest.count('"') % 2 == 1
        return unclosed and _INLINE_TAIL.match(rest) is None
    if rest[0] == "[":
        return "]" not in rest
    if rest[0] == ":":
        return "\n" not in rest
    return False
