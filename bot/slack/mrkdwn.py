"""Model text -> Slack mrkdwn: escaping, neutralised mentions, and splitting long replies."""

from __future__ import annotations

import re

_CODE_SPLIT = re.compile(r"(```.*?```|`[^`\n]+`)", re.DOTALL)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_STRIKE = re.compile(r"~~(.+?)~~")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)
_BULLET = re.compile(r"^(\s*)[*-]\s+", re.MULTILINE)
_PLACEHOLDER = "\x00{}\x00"


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
        label = escape(match.group(1)).replace("|", "/")
        url = match.group(2).replace("|", "%7C").replace("<", "%3C").replace(">", "%3E")
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


def split_message(text: str, limit: int) -> list[str]:
    """Split `text` into chunks of at most `limit` characters without losing any of it.

    Prefers paragraph breaks, then line breaks, then spaces; a code fence cut in two is
    closed at the end of one chunk and reopened at the start of the next.
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
    for sep in ("\n\n", "\n", " "):
        at = text.rfind(sep, budget // 2, budget)
        if at > 0:
            return at + len(sep)
    return budget
