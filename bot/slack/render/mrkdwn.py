"""Model text -> Slack mrkdwn: escaping, neutralised mentions, and splitting long replies."""

from __future__ import annotations

import re

from bot.slack.render.links import Link, definitions, find_links, honest_label, is_web_url

_CODE_SPLIT = re.compile(r"(```.*?```|`[^`\n]+`)", re.DOTALL)
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_STRIKE = re.compile(r"~~(.+?)~~")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)
_BULLET = re.compile(r"^(\s*)[*-]\s+", re.MULTILINE)
_PLACEHOLDER = "\x00{}\x00"
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
    refs = definitions([link for piece in pieces[::2] for link in find_links(piece)])
    out: list[str] = []
    for i, piece in enumerate(pieces):
        if i % 2 == 1:
            out.append(escape(piece))
        else:
            out.append(_convert_prose(piece, refs))
    return "".join(out)


def _convert_prose(text: str, refs: dict[str, str]) -> str:
    links: list[str] = []
    kept: list[str] = []
    at = 0
    for link in find_links(text):
        kept.append(text[at : link.start])
        links.append(_render_link(link, refs))
        kept.append(_PLACEHOLDER.format(len(links) - 1))
        at = link.end
    kept.append(text[at:])
    text = escape("".join(kept))
    text = _HEADING.sub(lambda m: f"*{m.group(1)}*", text)
    text = _BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)
    text = _STRIKE.sub(lambda m: f"~{m.group(1)}~", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    for index, shown in enumerate(links):
        text = text.replace(_PLACEHOLDER.format(index), shown)
    return text


def _render_link(link: Link, refs: dict[str, str]) -> str:
    """One link as mrkdwn: `<url|label>` for a web URL (its label honest), else text;
    a reference definition stays visible as `ref: url` text."""
    label = " ".join((link.label or "").split())
    if link.definition:
        return escape(f"{label}: {link.url}")
    url = link.url if link.ref is None else refs.get(link.ref)
    if url is None or not is_web_url(url):
        return escape(label)
    url = url.replace("|", "%7C").replace("<", "%3C").replace(">", "%3E")
    if not label:
        return f"<{url}>"
    return f"<{url}|{escape(honest_label(label, url)).replace('|', '/')}>"


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
