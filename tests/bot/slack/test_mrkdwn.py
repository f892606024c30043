"""Model text -> mrkdwn: escaping, neutralised mentions, splitting without loss."""

from __future__ import annotations

import pytest

from bot.slack.command_args import CommandSyntaxError, parse_handoff_args, parse_thread_link
from bot.slack.render.mrkdwn import markdown_to_mrkdwn, split_message


@pytest.mark.parametrize(
    "danger", ["<!channel>", "<!here>", "<!everyone>", "<@U123>", "<!subteam^S1>"]
)
def test_formatting_never_pings(danger: str) -> None:
    out = markdown_to_mrkdwn(f"hey {danger} there")
    assert danger not in out and "&lt;" in out


def test_formatting_converts_markdown() -> None:
    out = markdown_to_mrkdwn("# Title\n**bold** & [docs](https://x.io/a)\n- item")
    assert out == "*Title*\n*bold* &amp; <https://x.io/a|docs>\n• item"


def test_formatting_split_keeps_every_word_and_fences() -> None:
    text = "intro\n```\n" + "\n".join(f"line {i}" for i in range(400)) + "\n```\nend"
    chunks = split_message(text, 500)
    assert all(len(c) <= 500 for c in chunks)
    assert all(c.count("```") % 2 == 0 for c in chunks)
    assert " ".join(chunks).replace("```", "").split() == text.replace("```", "").split()


def test_thread_link_parses_reply_links_to_root() -> None:
    ref = parse_thread_link(
        "<https://x.slack.com/archives/C1/p1700000001000200?thread_ts=1700000000.000100&cid=C1>"
    )
    assert (ref.channel, ref.thread_ts) == ("C1", "1700000000.000100")


def test_thread_link_handoff_args_person_agent_and_errors() -> None:
    link = "https://x.slack.com/archives/C1/p1700000000000100"
    assert parse_handoff_args(f"{link} <@U9|amy> call back").person == "U9"
    assert parse_handoff_args(f"{link} billing_agent").agent == "billing_agent"
    with pytest.raises(CommandSyntaxError):
        parse_handoff_args("https://example.com/nope billing_agent")
