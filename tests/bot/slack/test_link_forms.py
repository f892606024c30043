"""Every form of link the model may write shows its real URL when its label names
another host: posted (mrkdwn) and streamed (Markdown, split across deltas anywhere)."""

from __future__ import annotations

import pytest

from bot.slack.render.markdown import MarkdownGate, safe_markdown
from bot.slack.render.mrkdwn import markdown_to_mrkdwn

EVIL = "https://evil.example/login"

DISHONEST = {
    "inline": f"Pay at [bank.example.com]({EVIL}) today.",
    "title": f'Pay at [bank.example.com]({EVIL} "Your bank") today.',
    "angle destination": f"Pay at [bank.example.com](<{EVIL}>) today.",
    "nested brackets": f"Pay at [see [bank.example.com]]({EVIL}) today.",
    "label over a line": f"Pay at [the bank.example\n.com site]({EVIL}) today.",
    "reference": f"Pay at [bank.example.com][bank] today.\n\n[bank]: {EVIL}",
    "collapsed reference": f"Pay at [bank.example.com][] today.\n\n[Bank.Example.com]: {EVIL}",
    "reference with title": f'Pay at [bank.example.com][b] today.\n\n[b]: <{EVIL}> "Bank"',
    "slack form": f"Pay at <{EVIL}|bank.example.com> today.",
}

# Each form, posted: what the mrkdwn shows.
POSTED = {
    "inline": f"Pay at <{EVIL}|{EVIL}> today.",
    "title": f"Pay at <{EVIL}|{EVIL}> today.",
    "angle destination": f"Pay at <{EVIL}|{EVIL}> today.",
    "nested brackets": f"Pay at <{EVIL}|{EVIL}> today.",
    "label over a line": f"Pay at <{EVIL}|{EVIL}> today.",
    "reference": f"Pay at <{EVIL}|{EVIL}> today.\n\nbank: {EVIL}",
    "collapsed reference": f"Pay at <{EVIL}|{EVIL}> today.\n\nBank.Example.com: {EVIL}",
    "reference with title": f"Pay at <{EVIL}|{EVIL}> today.\n\nb: {EVIL}",
    "slack form": f"Pay at <{EVIL}|{EVIL}> today.",
}

# Each form, streamed: a reference cannot be resolved before its definition has been
# sent, so it shows as plain text, and its definition as text, never as a link.
LINKED = f"Pay at [{EVIL}]({EVIL}) today."
STREAMED = {
    "inline": LINKED,
    "title": LINKED,
    "angle destination": LINKED,
    "nested brackets": LINKED,
    "label over a line": LINKED,
    "reference": f"Pay at bank.example.com today.\n\nbank: {EVIL}",
    "collapsed reference": f"Pay at bank.example.com today.\n\nBank.Example.com: {EVIL}",
    "reference with title": f"Pay at bank.example.com today.\n\nb: {EVIL}",
    "slack form": LINKED,
}


@pytest.mark.parametrize("form", sorted(DISHONEST))
def test_a_posted_link_shows_its_real_url(form: str) -> None:
    assert markdown_to_mrkdwn(DISHONEST[form]) == POSTED[form]


@pytest.mark.parametrize("form", sorted(DISHONEST))
def test_a_streamed_link_shows_its_real_url_however_the_deltas_split(form: str) -> None:
    text = DISHONEST[form]
    whole = safe_markdown(text)
    assert whole == STREAMED[form]
    for cut in range(1, len(text)):
        for second in (cut + 1, cut + 7, len(text)):
            gate = MarkdownGate()
            pieces = [gate.feed(text[:cut]), gate.feed(text[cut:second]), gate.feed(text[second:])]
            pieces.append(gate.flush())
            assert "".join(pieces) == whole, (cut, second)


def test_an_autolink_stays_a_link_to_itself() -> None:
    assert markdown_to_mrkdwn(f"see <{EVIL}>") == f"see <{EVIL}>"
    assert safe_markdown(f"see <{EVIL}>") == f"see [{EVIL}]({EVIL})"


@pytest.mark.parametrize(
    "text",
    [
        'Read [the docs](https://docs.example.com/a "Docs") now.',
        "Read [the [new] docs](https://docs.example.com/a) now.",
        "Read [the docs][d] now.\n\n[d]: https://docs.example.com/a",
        "Read <https://docs.example.com/a|the docs> now.",
    ],
)
def test_an_honest_link_keeps_its_label(text: str) -> None:
    posted = markdown_to_mrkdwn(text)
    assert posted.startswith("Read <https://docs.example.com/a|the ")
    streamed = safe_markdown(text)
    assert "docs](https://docs.example.com/a) now" in streamed or "Read the docs now" in streamed


def test_what_cannot_be_a_link_is_released_and_escaped() -> None:
    gate = MarkdownGate()
    assert gate.feed("a < b and [note] here <!channel>") == (
        "a &lt; b and [note] here &lt;!channel&gt;"
    )
    assert gate.feed(" <ht") == " "
    assert gate.feed("x>") == "&lt;htx&gt;"
    assert gate.feed("[ref]") == ""
    assert gate.feed(": https://evil.example\nok") == "ref: https://evil.example\nok"
