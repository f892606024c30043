"""Hostile input: fuzzed Slack payloads that pass signature verification, and requests
with bad signatures.

Fuzzed payloads (hypothesis: malformed JSON, missing fields, wrong types, huge strings,
unknown event and payload types, junk slash commands and interactivity) never get a
500, never crash the process and never store anything malformed. The suite runs
`FUZZ_EXAMPLES` payloads (default 1,500, to keep it fast); `bench/fuzz.py` runs 10,000.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.harness import BotHarness, dm, open_database, sign
from tests.fakes.slack_api import FakeSlackApi
from tests.reliability.support import EchoModel, echo_tree, event_body

T = TypeVar("T")
FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "1500"))
BAD_SIGNATURES = 1_000

FORM = "application/x-www-form-urlencoded"
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)
HUGE = st.integers(40_001, 50_000).map(lambda n: "x" * n)
TS = st.from_regex(r"\A1[0-9]{9}\.[0-9]{6}\Z")


def field(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field that is usually valid, sometimes junk, huge, or an injection attempt."""
    nasty = st.sampled_from(["", " ", "<!channel>", "../../etc", "\x00", "'; DROP TABLE x;--"])
    return st.one_of(valid, valid, JSON, HUGE, nasty)


EVENT = st.dictionaries(
    st.sampled_from(
        ["type", "channel", "user", "ts", "thread_ts", "text", "subtype", "channel_type", "bot_id"]
    ),
    st.nothing(),
).flatmap(
    lambda _: st.fixed_dictionaries(
        {},
        optional={
            "type": field(
                st.sampled_from(
                    ["message", "app_mention", "app_home_opened", "reaction_added", "team_join"]
                )
            ),
            "channel": field(st.sampled_from(["D1", "C1", "CSECRET", "G1"])),
            "user": field(st.sampled_from(["U1", "U2", "UBOT"])),
            "ts": field(TS),
            "thread_ts": field(TS),
            "text": field(st.text(max_size=200)),
            "subtype": field(st.sampled_from(["message_changed", "bot_message", "file_share"])),
            "channel_type": field(st.sampled_from(["im", "channel", "group"])),
            "bot_id": field(st.sampled_from(["B2", "BBOT"])),
            "view": JSON,
        },
    )
)

ENVELOPE = st.fixed_dictionaries(
    {},
    optional={
        "type": field(st.sampled_from(["event_callback", "url_verification", "app_rate_limited"])),
        "team_id": field(st.just("T1")),
        "event_id": field(st.from_regex(r"\AEv[0-9A-Z]{6}\Z")),
        "event": st.one_of(EVENT, JSON),
        "challenge": JSON,
        "authorizations": JSON,
    },
)

VIEW = st.fixed_dictionaries(
    {},
    optional={
        "type": field(st.sampled_from(["modal", "home", "workflow_step"])),
        "callback_id": field(st.sampled_from(["handoff_modal", "other"])),
        "private_metadata": field(st.just('{"team": "T1", "channel": "C1", "thread_ts": "1.2"}')),
        "state": st.one_of(JSON, st.just({"values": {"agent": {"value": {}}}})),
    },
)

COMMAND = st.fixed_dictionaries(
    {},
    optional={
        "command": field(st.sampled_from(["/summary", "/handoff", "/other"])),
        "text": field(st.text(max_size=100)),
        "team_id": field(st.just("T1")),
        "user_id": field(st.just("U1")),
        "channel_id": field(st.just("C1")),
        "response_url": JSON,
        "trigger_id": JSON,
    },
).map(lambda d: {k: v if isinstance(v, str) else json.dumps(v) for k, v in d.items()})

INTERACTIVE = st.fixed_dictionaries(
    {},
    optional={
        "type": field(st.sampled_from(["message_action", "view_submission", "block_actions"])),
        "callback_id": field(
            st.sampled_from(["summarize_thread", "handoff_thread", "handoff_modal"])
        ),
        "team": st.one_of(st.just({"id": "T1"}), JSON),
        "user": st.one_of(st.just({"id": "U1"}), JSON),
        "channel": st.one_of(st.just({"id": "C1"}), JSON),
        "message": st.one_of(EVENT, JSON),
        "view": st.one_of(VIEW, JSON),
        "trigger_id": JSON,
        "response_url": JSON,
    },
)

# (body, content type) as Slack's transport would carry it.
REQUEST = st.one_of(
    ENVELOPE.map(lambda e: (json.dumps(e), "application/json")),
    EVENT.map(lambda e: (event_body(e, event_id="EvFUZZ1"), "application/json")),
    st.text(max_size=300).map(lambda t: (t, "application/json")),
    JSON.map(lambda j: (json.dumps(j), "application/json")),
    COMMAND.map(lambda c: (urlencode(c), "application/x-www-form-urlencoded")),
    INTERACTIVE.map(
        lambda p: (urlencode({"payload": json.dumps(p)}), "application/x-www-form-urlencoded")
    ),
    st.text(max_size=300).map(
        lambda t: (urlencode({"payload": t}), "application/x-www-form-urlencoded")
    ),
)


class LoopThread:
    """An event loop on its own thread, so hypothesis's synchronous `@given` can drive
    the running bot."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


class Running:
    def __init__(self, slack: FakeSlackApi, bot: BotHarness, db: Any) -> None:
        self.slack, self.bot, self.db = slack, bot, db


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[LoopThread, Running]]:
    loop = LoopThread()

    async def start() -> Running:
        slack = await FakeSlackApi(members={"C1": ["U1"]}).start()
        db = await open_database(tmp_path)
        bot = await BotHarness.start(
            slack, agent=echo_tree(EchoModel()), db=db, summarizer=object()
        )
        return Running(slack, bot, db)

    async def stop(r: Running) -> None:
        await r.bot.stop()
        await r.db.close()
        await r.slack.stop()

    state = loop.run(start())
    try:
        yield loop, state
    finally:
        loop.run(stop(state))
        loop.close()


_SLACK_ID = re.compile(r"[A-Z0-9][A-Z0-9_]{0,31}")
_SLACK_TS = re.compile(r"\d{1,12}\.\d{1,8}")


def fuzz(loop: LoopThread, state: Running, examples: int) -> list[int]:
    """Send `examples` fuzzed, correctly signed requests; returns every status seen."""
    statuses: list[int] = []

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(REQUEST)
    def send(request: tuple[str, str]) -> None:
        body, content_type = request
        resp = loop.run(state.bot.post(body, content_type))
        statuses.append(resp.status)
        assert resp.status < 500, (resp.status, body[:500])

    send()
    return statuses


def test_hostile_input_fuzzed_signed_payloads_never_500_or_store_garbage(
    running: tuple[LoopThread, Running],
) -> None:
    loop, state = running
    statuses = fuzz(loop, state, FUZZ_EXAMPLES)
    assert len(statuses) >= FUZZ_EXAMPLES * 0.9
    loop.run(state.bot.idle(30))
    # Still alive and well: a real message is answered.
    resp = loop.run(state.bot.send_event(dm("still there?", ts="1800000000.000001")))
    assert resp.status == 200
    loop.run(
        state.slack.wait_for(
            lambda s: any(
                "Answer to: still there?" in (m.get("text") or "")
                for m in s.messages.get("D1", {}).values()
            )
        )
    )
    threads = loop.run(state.db.threads.list_threads(limit=100_000))
    for thread in threads:
        assert _SLACK_ID.fullmatch(thread.channel_id) and _SLACK_TS.fullmatch(thread.thread_ts)
        assert _SLACK_ID.fullmatch(thread.user_id) and thread.team_id == "T1"
    assert loop.run(state.db.inflight.count()) == 0


def _flip_last(signature: str) -> str:
    return signature[:-1] + ("1" if signature.endswith("0") else "0")


async def test_hostile_input_bad_signatures_are_all_rejected(
    slack: FakeSlackApi, tmp_path: Path
) -> None:
    model = EchoModel()
    db = await open_database(tmp_path)
    bot = await BotHarness.start(slack, agent=echo_tree(model), db=db, summarizer=object())
    try:
        body = event_body(dm("hello", ts="1800000000.000001"), event_id="EvBAD")
        good = sign(body)
        forgeries: list[dict[str, str]] = [
            sign(body, secret="wrong-secret"),
            sign(body, timestamp=int(good["X-Slack-Request-Timestamp"]) - 3600),
            {"X-Slack-Request-Timestamp": good["X-Slack-Request-Timestamp"]},
            {"X-Slack-Signature": good["X-Slack-Signature"]},
            {**good, "X-Slack-Signature": _flip_last(good["X-Slack-Signature"])},
            {**good, "X-Slack-Signature": "v1=" + good["X-Slack-Signature"][3:]},
            {**good, "X-Slack-Request-Timestamp": "not-a-number"},
            {**good, "X-Slack-Signature": ""},
        ]
        statuses: list[int] = []
        for start in range(0, BAD_SIGNATURES, 50):
            sends = []
            for n in range(start, start + 50):
                headers = forgeries[n % len(forgeries)]
                # Every 9th: a correct signature over a different body than the one sent.
                sent = body.replace("hello", f"hello {n}") if n % 9 == 0 else body
                sends.append(
                    bot.post(
                        sent,
                        "application/json",
                        headers={"Content-Type": "application/json", **headers},
                        signed=False,
                    )
                )
            statuses += [r.status for r in await asyncio.gather(*sends)]
        await bot.idle()
    finally:
        await bot.stop()
    threads = await db.threads.list_threads()
    inflight = await db.inflight.count()
    await db.close()
    assert statuses == [401] * BAD_SIGNATURES
    assert slack.calls == [] and model.calls == 0
    assert threads == [] and inflight == 0
