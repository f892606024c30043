"""Everything the bot posts is a call Slack accepts, within Block Kit's documented limits,
with nothing cut and nothing the model wrote able to ping, mislead or leak.

The fake Slack API refuses what Slack refuses (unknown arguments, oversize sections,
headers, blocks, modal titles), and the e2e fixtures fail any test with a refused call.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from agents.models.base import ModelError
from agents.summary.agent import SUMMARIZER_NAME
from agents.summary.record import HandoffRecord, Item
from bot.slack.permalinks import ThreadLinks
from bot.slack.render.digest_blocks import digest_message, unavailable_message
from bot.slack.render.limits import SECTION_TEXT, post_paged
from storage.threads import ThreadKey
from tests.e2e.agent_model import AgentModel
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, channel_message
from tests.e2e.replies import answers, wait_answers
from tests.e2e.replies import shown as shown_text
from tests.e2e.test_handoff_trust import LINK, QUESTION, ROOT, shipped_bot, thread_with_history
from tests.fakes.slack_api import FakeSlackApi

# What a model may write that must never ping anyone once posted.
PINGS = re.compile(r"<!(channel|here|everyone)(\|[^>]*)?>|<!subteam\^|<@U[A-Z0-9]+>")


def texts_of(call: dict[str, Any]) -> str:
    return str(call.get("text", "")) + json.dumps(call.get("blocks") or [])


async def one_reply(slack: FakeSlackApi, start_bot: StartBot, answer: str, **settings: Any) -> Any:
    model = AgentModel({"support_supervisor": [answer]})
    bot = await shipped_bot(slack, start_bot, model, AgentModel())
    if settings:
        bot.services.settings = bot.services.settings.model_copy(update=settings)
    await bot.send_event(channel_message(QUESTION, ts=ROOT, mention=True))
    await wait_answers(slack)
    await bot.idle()
    return bot


async def test_reply_longer_than_a_section_after_escaping_is_split_not_refused(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    # 3,200 characters that escaping lengthens past 3,500: the old reply was refused.
    lines = [f"Step {n}: compare A&B <then> C&D, and keep going." for n in range(64)]
    answer = "\n".join(lines)
    assert 3000 < len(answer) < 3500
    bot = await one_reply(slack, start_bot, answer)
    # Longer than one message, and complete at once: posted whole, the first part and
    # then the rest as continuations in the thread.
    [update, *rest] = [c for c in slack.calls_to("chat.postMessage") if c.get("thread_ts") == ROOT]
    shown = [update["blocks"][0]["text"]["text"]] + [c["blocks"][0]["text"]["text"] for c in rest]
    assert all(len(t) <= SECTION_TEXT for t in shown) and len(shown) >= 2
    joined = "\n".join(shown)
    for n in range(64):
        assert f"Step {n}: compare A&amp;B &lt;then&gt; C&amp;D, and keep going." in joined
    key = ThreadKey(team_id=TEAM, channel_id="C1", thread_ts=ROOT)
    assert not (await bot.services.db.threads.get(key)).needs_attention
    # The feedback buttons close the reply: under its last message only.
    kinds = [[b["type"] for b in m["blocks"]] for m in [update, *rest]]
    assert [k.count("context_actions") for k in kinds] == [0] * (len(kinds) - 1) + [1]


DISHONEST = (
    "Log in at [https://bank.example.com/login](https://evil.example/steal) "
    "<!channel> <!here> <!subteam^S123> <@U999> please."
)


async def test_reply_posted_whole_links_show_their_real_host_and_never_ping(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    # Streamed text is made safe the same way (tests/e2e/test_streaming.py).
    await one_reply(slack, start_bot, DISHONEST)
    [reply] = answers(slack)
    text = shown_text(reply)
    assert "<https://evil.example/steal|https://evil.example/steal>" in text
    assert "bank.example.com" not in text
    assert PINGS.search(json.dumps([c.args for c in slack.calls])) is None


async def test_reply_links_show_their_real_host_and_never_unfurl(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    await one_reply(slack, start_bot, DISHONEST, streaming="off")
    [update] = slack.calls_to("chat.update")
    text = update["blocks"][0]["text"]["text"]
    assert "<https://evil.example/steal|https://evil.example/steal>" in text
    assert "bank.example.com" not in text
    assert PINGS.search(texts_of(update)) is None
    for post in slack.calls_to("chat.postMessage"):
        assert post["unfurl_links"] in (False, "0", "false") and post["unfurl_media"] in (
            False,
            "0",
            "false",
        )


@pytest.mark.parametrize("streaming", ["auto", "off"])
async def test_agent_name_shows_without_passing_username_to_chat_update(
    slack: FakeSlackApi, start_bot: StartBot, streaming: str
) -> None:
    model = AgentModel({"support_supervisor": ["Happy to help."]})
    bot = await shipped_bot(slack, start_bot, model, AgentModel())
    update = {"chat_write_customize": True, "streaming": streaming}
    bot.services.settings = bot.services.settings.model_copy(update=update)
    await bot.send_event(channel_message(QUESTION, ts=ROOT, mention=True))
    await wait_answers(slack)
    await bot.idle()
    if streaming == "auto":
        [post] = slack.calls_to("chat.postMessage")  # complete at once: posted whole
        assert post["username"] == "support_supervisor"
    else:
        # The placeholder names no agent; chat.update takes no username (the fake
        # refuses one), so the reply is posted anew under its agent.
        placeholder, post = slack.calls_to("chat.postMessage")
        assert "username" not in placeholder
        assert post["username"] == "support_supervisor"
    assert all("username" not in call for call in slack.calls_to("chat.update"))
    [reply] = [m for m in slack.thread("C1", ROOT) if m.get("bot_id")]
    deleted = [c["ts"] for c in slack.calls_to("chat.delete")]
    assert len(deleted) == (0 if streaming == "auto" else 1) and reply["ts"] not in deleted
    assert reply["username"] == "support_supervisor" and "Happy to help." in shown_text(reply)


async def test_usage_texts_escape_their_angle_brackets(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await one_reply(slack, start_bot, "Hi.")
    for command in ("/summary", "/handoff"):
        resp = await bot.send_command(command, "")
        body = await resp.text()  # read, and kept, by the harness
        assert "&lt;thread link&gt;" in body and "<thread link>" not in body


async def test_summary_model_failure_shows_an_error_code_never_provider_text(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    secret = "upstream gateway llm-gw.internal.example rejected key sk-live-abc123"
    failing = ModelError(secret, code="model_unavailable")
    summaries = AgentModel({SUMMARIZER_NAME: [failing, failing]})
    model = AgentModel({"support_supervisor": ["Looking into order 4411."]})
    bot = await shipped_bot(slack, start_bot, model, summaries)
    slack.add_message("C1", ts=ROOT, text=QUESTION, user="U1")
    await bot.send_event(channel_message(QUESTION, ts=ROOT, mention=True))
    await wait_answers(slack)
    await bot.idle()
    await bot.send_command("/summary", LINK)
    await bot.idle()
    [reply] = slack.calls_to("response_url")
    shown = texts_of(reply)
    assert "model call failed (model_unavailable)" in shown
    assert "llm-gw" not in shown and "sk-live" not in shown and "gateway" not in shown


async def test_handoff_note_near_the_modal_limit_posts_and_confirms(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot, _ = await thread_with_history(slack, start_bot, ["not json", "still not json"])
    note = ("Refund A&B <asap> " * 170)[:2990]
    await bot.send_command("/handoff", f"{LINK} <@U2> {note}")
    await bot.idle()
    assert "Handed off to <@U2>." in [c.get("text") for c in slack.calls_to("response_url")]
    for channel in ("C1", "CLEAD"):
        posts = [c for c in slack.calls_to("chat.postMessage") if c["channel"] == channel]
        shown = "".join(b["text"]["text"] for p in posts[-1:] for b in p["blocks"][:3])
        assert shown.count("Refund A&amp;B &lt;asap&gt;") >= 160


def long_record(facts: int, size: int) -> HandoffRecord:
    items = [
        Item(text=f"Fact {n:03d}: " + "order 4411 detail & more " * (size // 25), sources=["e1"])
        for n in range(facts)
    ]
    return HandoffRecord(goal="Refund for order 4411", facts=items)


LINKS = ThreadLinks(
    channel="C1",
    thread_ts=ROOT,
    thread_link=f"https://fake.slack.com/archives/C1/p{ROOT.replace('.', '')}",
)


async def test_digest_sections_are_split_whole_and_long_digests_continue_in_thread(
    slack: FakeSlackApi,
) -> None:
    client = AsyncWebClient(token="xoxb-test", base_url=slack.url)
    for facts, size in ((24, 200), (400, 1000)):
        text, blocks = digest_message(
            long_record(facts, size), events=[], links=LINKS, owners=[], cost=0.0, attempts=1
        )
        first = await post_paged(client, channel="CLEAD", text=text, blocks=blocks)
        pages = [c for c in slack.calls_to("chat.postMessage") if c.get("thread_ts") == first]
        shown = json.dumps(
            [c for c in slack.calls_to("chat.postMessage") if c.get("ts") == first]
            + [m for m in slack.thread("CLEAD", first)]
        )
        for n in range(facts):
            assert f"Fact {n:03d}: " in shown, (facts, n)
        assert ("Continued in this thread" in shown) == bool(pages)
    assert slack.refused == []


def test_digest_header_keeps_the_channel_mention_outside_link_text() -> None:
    _, blocks = digest_message(
        long_record(1, 50), events=[], links=LINKS, owners=[], cost=0.0, attempts=1
    )
    intro = blocks[0]["text"]["text"]
    link = re.search(r"<https://[^>]*>", intro)
    assert link is not None and "<#" not in link.group(0) and "<#C1>" in intro
    _, notice = unavailable_message(LINKS, ["x"])
    first = notice[0]["text"]["text"]
    assert all("<#" not in m for m in re.findall(r"<https://[^>]*>", first))
