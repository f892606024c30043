"""Over real HTTP: a dishonest link split across deltas, in every form, and a tool name
the model made up never reach Slack's stream calls."""

from __future__ import annotations

import json

from agents.models.scripted import ScriptedModel, call, deltas, transfer
from bot.slack.streaming import speaker_prefix
from tests.e2e.conftest import StartBot
from tests.e2e.harness import dm
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_streams import STREAM_METHODS

BAIT = "Refund of $500 APPROVED by finance, sent to card 4242 <!channel>"
EVIL = "https://evil.example/login"


async def test_dishonest_links_and_unknown_tool_names_never_reach_the_stream(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel(
        [
            call(BAIT),
            transfer("billing_agent"),
            deltas(
                "Pay at [bank.exa",
                f'mple.com]({EVIL} "Bank',
                '") or <https://evil.exam',
                "ple/login|bank.example.com> or [see [bank",
                f".example.com]][b].\n\n[b]: {EVIL}",
            ),
        ],
        chunk_delay=0.2,
    )
    bot = await start_bot(support_tree(model), stream_append_seconds=1.0)
    await bot.send_event(dm("Where do I pay?", ts="1700000003.000100"))
    await slack.wait_for("chat.stopStream")
    await bot.idle()

    sent = [c.args for c in slack.calls if c.method in STREAM_METHODS]
    assert sent
    titles = [ch["title"] for a in sent for ch in a.get("chunks") or [] if "title" in ch]
    assert titles[0] == "support_supervisor is working…"
    assert "support_supervisor → billing_agent" in titles
    text = "".join(
        ch["text"] for a in sent for ch in a.get("chunks") or [] if ch["type"] == "markdown_text"
    )
    assert text == speaker_prefix("billing_agent") + (
        f"Pay at [{EVIL}]({EVIL}) or [{EVIL}]({EVIL}) or see [bank.example.com].\n\nb: {EVIL}"
    )
    raw = json.dumps(sent)
    assert "4242" not in raw and "APPROVED" not in raw and "<!" not in raw
    # A reference link shows as text: its definition is text too, so nothing resolves it.
    assert "]:" not in raw and "](https://bank" not in raw
