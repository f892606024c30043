"""Model text -> Slack mrkdwn: escaping, neutralised mentions, and splitting long replies."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_CODE_SPLIT = re.compile(r"(```.*?```|`[^`\n]+`)", re.DOTALL)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_STRIKE = re.compile(r"~~(.+?)~~")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)
_BULLET = re.compile(r"^(\s*)[*-]\s+", re.MULTILINE)
_PLACEHOLDER = "\x00{}\x00"
# Something a reader takes for a host name: dotted labels ending in a letter TLD.
_HOSTLIKE = re.compile(
    r"(?<![\w@-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63})(?![\w-])", re.I
)
# Escaped entities and Slack's `<...>` markup, which a split must never cut through.
_ATOM = re.compile(r"&[a-z]+;|<[^<>\n]{1,1000}>")


def escape(text: str) -> str:
    """Escape the three characters Slack treats as control: `&`, `<` and `>`.

    Escaping `<` and `>` is what neutralises `<!channel>`, `<!here>`, `<!everyone>`,
    `<@U123>` and `<!subteam^S1>`: Slack only parses them when the brackets are literal.
    """
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def markdown_to_mrkdwn(text: str) -> str:
    """Convert common Markdown to Slack mrkdwn, escaping everything the model wrote.

    Code spans keep their content verbatim (escaped only). Links become `<url|label>`,
    the one place where the output contains Slack control brackets, and only for
    http(s) URLs, so the model can never produce a mention or a broadcast.
    """
    pieces = _CODE_SPLIT.split(text)
    out: list[str] = []
    for i, piece in enumerate(pieces):
        if i % 2 == 1:
            out.append(escape(piece))
        else:
            out.append(_convert_prose(piece))
    return "".join(out)


def _convert_prose(text: str) -> str:
    links: list[str] = []

    def keep_link(match: re.Match[str]) -> str:
        url = match.group(2).replace("|", "%7C").replace("<", "%3C").replace(">", "%3E")
        label = escape(honest_label(match.group(1), url)).replace("|", "/")
        links.append(f"<{url}|{label}>")
        return _PLACEHOLDER.format(len(links) - 1)

    text = _LINK.sub(keep_link, text)
    text = escape(text)
    text = _HEADING.sub(lambda m: f"*{m.group(1)}*", text)
    text = _BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)
    text = _STRIKE.sub(lambda m: f"~{m.group(1)}~", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    for index, link in enumerate(links):
        text = text.replace(_PLACEHOLDER.format(index), link)
    return text


def honest_label(label: str, url: str) -> str:
    """`label`, unless it names a host other than `url`'s: then the real URL is shown, so a
    link can never read as one site while leading to another."""
    host = (urlsplit(url).hostname or "").casefold()
    for named in _HOSTLIKE.findall(label):
        named = named.casefold().rstrip(".")
        if named != host and not host.endswith("." + named):
            return url
    return label


def split_message(text: str, limit: int) -> list[str]:
    """Split escaped mrkdwn `text` into chunks of at most `limit` characters, losing none.

    Cuts at paragraph breaks, then line breaks, then spaces, never inside an entity
    (`&amp;`) or a link (`<url|label>`); a code fence cut in two is closed at the end of
    one chunk and reopened at the start of the next.
    """
    if limit < 20:
        raise ValueError("limit too small to split safely")
    chunks: list[str] = []
    rest = text
    while len(rest) > limit:
        budget = limit - 4  # room to close a code fence
        cut = _best_cut(rest, budget)
        head, rest = rest[:cut], rest[cut:]
        if head.count("```") % 2 == 1:
            head += "\n```"
            rest = "```\n" + rest
        chunks.append(head.rstrip("\n") if head.strip() else head)
        rest = rest.lstrip("\n") if rest.strip() else rest
    if rest or not chunks:
        chunks.append(rest)
    return chunks


def _best_cut(text: str, budget: int) -> int:
    """Where to cut so the head fits `budget` and no entity or link is split."""
    atoms = [m.span() for m in _ATOM.finditer(text, 0, budget + 1100)]

    def inside(at: int) -> bool:
        return any(start < at < end for start, end in atoms)

    for sep in ("\n\n", "\n", " "):
        at = text.rfind(sep, budget // 2, budget)
        while at > 0 and inside(at + len(sep)):
            at = text.rfind(sep, budget // 2, at)
        if at > 0:
            return at + len(sep)
    cut = budget
    for start, end in atoms:
        if start < cut < end:
            cut = start
    return cut if cut > 0 else budget
