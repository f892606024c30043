"""Runs the bot's aiohttp app on a random port and sends it signed Slack requests."""

from __future__ import annotations

import gc
import hashlib
import hmac
import itertools
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp

from agents.base_agent import BaseAgent
from agents.runner import Runner
from bot.config import Settings
from bot.digests.job import DigestJob
from bot.slack.app import build_bolt_app, build_web_app, create_services, drain
from bot.slack.message_ts import SlackTsPlugin
from bot.slack.server import WebFront, start_web
from bot.slack.services import BotServices
from bot.threads.speaker import SpeakerPlugin
from bot.wiring import compaction_hook, loop_lag_gate, work_limit
from storage.database import Database
from tests.fakes.slack_api import FakeSlackApi

SIGNING_SECRET = "test-signing-secret"
TEAM = "T1"


@contextmanager
def collector_off() -> Iterator[None]:
    """Python's garbage collector off inside the block (after one collection, so the
    block starts from a clean heap) and on again after it."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def sign(
    body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None
) -> dict[str, str]:
    """Headers Slack would send: `X-Slack-Request-Timestamp` and a v0 HMAC signature."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


async def open_database(tmp_path: Path) -> Database:
    """A real SQLite database file in the test's temporary directory."""
    return await Database.open(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")


class BotHarness:
    """The bot under test: HTTP app on 127.0.0.1, Web API pointed at a `FakeSlackApi`."""

    def __init__(self, slack: FakeSlackApi, services: BotServices, close: Any) -> None:
        self.slack = slack
        self.services = services
        self._close_slack = close
        self._events = itertools.count(1)
        self._front: WebFront | None = None
        self.http: aiohttp.ClientSession | None = None
        self.url = ""

    @classmethod
    async def start(
        cls,
        slack: FakeSlackApi,
        *,
        agent: BaseAgent,
        db: Any,
        summarizer: Any = None,
        compaction_model: Any = None,
        after_invocation: Sequence[Any] = (),
        limit: Any = None,
        model_slot: Any = None,
        **settings: Any,
    ) -> BotHarness:
        """Start the bot; `compaction_model` compacts after each invocation as shipped
        (`COMPACTION_INTERVAL`, `COMPACTION_OVERLAP`, under the shared slot count);
        `after_invocation` hooks run after it (the window records of
        `SUMMARY_MODE=incremental`, say); `limit` is the shared slot count those hooks were
        built under (`bot.wiring.work_limit`; unset, one is built from the settings);
        `model_slot` is the one-request model slot turns hold (`bot.models.Models.slot`)."""
        config = Settings(
            slack_bot_token="xoxb-test",
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=slack.url,
            _env_file=None,
            **settings,
        )
        gate = loop_lag_gate(config)
        # As shipped: compaction waits for a slot of the one shared limit.
        limit = work_limit(config, gate) if limit is None else limit
        hooks = []
        if compaction_model is not None:
            hooks.append(compaction_hook(config, db.sessions, compaction_model, limit))
        hooks.extend(after_invocation)
        runner = Runner(
            agent=agent,
            app_name=config.app_name,
            session_service=db.sessions,
            after_invocation=hooks,
            plugins=[SlackTsPlugin(), SpeakerPlugin()],
            max_message_chars=config.max_model_message_chars,
            model_slot=model_slot,
        )
        services, client = await create_services(
            config,
            db=db,
            runner=runner,
            summarizer=summarizer,
            retry_backoff=0.05,
            limit=limit,
            gate=gate,
        )
        harness = cls(slack, services, client.close)
        app = build_web_app(services, build_bolt_app(services))
        # The shipped front: connections capped and timed as `support-bot serve` serves.
        harness._front = await start_web(app, config, host="127.0.0.1", port=0)
        harness.url = f"http://127.0.0.1:{harness._front.port}"
        harness.http = aiohttp.ClientSession()
        return harness

    async def stop(self) -> None:
        await drain(self.services)
        assert self.http is not None
        await self.http.close()
        if self._front is not None:
            await self._front.stop()
        await self._close_slack()

    async def idle(self, within: float = 10.0) -> None:
        """Wait until every background job has finished."""
        import asyncio

        deadline = time.monotonic() + within
        while self.services.worker.pending and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        assert not self.services.worker.pending, "background work did not finish"

    async def post(
        self,
        body: str,
        content_type: str,
        headers: dict[str, str] | None = None,
        signed: bool = True,
    ) -> aiohttp.ClientResponse:
        assert self.http is not None
        all_headers = {"Content-Type": content_type, **(sign(body) if signed else {})}
        all_headers.update(headers or {})
        async with self.http.post(f"{self.url}/slack/events", data=body, headers=all_headers) as r:
            await r.read()
            return r

    async def send_event(
        self, event: dict[str, Any], *, event_id: str | None = None, retry_num: int | None = None
    ) -> aiohttp.ClientResponse:
        """Deliver an `event_callback` the way Slack does (signed; retries carry headers)."""
        body = json.dumps(
            {
                "token": "legacy",
                "team_id": TEAM,
                "api_app_id": "A1",
                "type": "event_callback",
                "event_id": event_id or f"Ev{next(self._events):06d}",
                "event_time": int(time.time()),
                "event": event,
            }
        )
        headers = {}
        if retry_num is not None:
            headers = {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"}
        return await self.post(body, "application/json", headers)

    async def send_command(
        self, command: str, text: str, *, user: str = "U1", channel: str = "C1"
    ) -> aiohttp.ClientResponse:
        body = self.command_body(command, text, user=user, channel=channel)
        return await self.post(body, "application/x-www-form-urlencoded")

    def command_body(
        self, command: str, text: str, *, user: str = "U1", channel: str = "C1"
    ) -> str:
        """A slash command's form body, with a trigger id of its own."""
        return urlencode(
            {
                "token": "legacy",
                "team_id": TEAM,
                "channel_id": channel,
                "user_id": user,
                "command": command,
                "text": text,
                "trigger_id": f"trig{next(self._events)}",
                "response_url": f"{self.slack.response_url_base}{next(self._events)}",
                "api_app_id": "A1",
            }
        )

    async def send_payload(self, payload: dict[str, Any]) -> aiohttp.ClientResponse:
        """An interactivity payload (shortcut, view submission), form-encoded as Slack does."""
        body = urlencode({"payload": json.dumps(payload)})
        return await self.post(body, "application/x-www-form-urlencoded")

    def digest_job(self) -> DigestJob:
        """The digest pass over this bot's database, summariser and Slack client, posting to
        `CLEAD`, every answered thread counting as idle."""
        s = self.services
        return DigestJob(
            db=s.db, summarizer=s.summarizer, client=s.client,
            lead_channel="CLEAD", idle_after=0, owner=s.owner, root=s.runner.agent,
        )  # fmt: skip

    def handoff_submission(
        self, *, user: str, private_metadata: str, person: str | None = None, note: str = ""
    ) -> dict[str, Any]:
        """The hand-off modal submitted with `person` picked (no agent) and `note`."""
        values = {
            "person": {"value": {"type": "users_select", "selected_user": person}},
            "agent": {"value": {"type": "static_select", "selected_option": None}},
            "note": {"value": {"type": "plain_text_input", "value": note}},
        }
        return {
            "type": "view_submission",
            "team": {"id": TEAM},
            "user": {"id": user},
            "api_app_id": "A1",
            "view": {
                "id": "V1",
                "type": "modal",
                "callback_id": "handoff_modal",
                "private_metadata": private_metadata,
                "state": {"values": values},
            },
        }

    def message_shortcut(
        self, callback_id: str, *, channel: str, ts: str, thread_ts: str, user: str = "U1"
    ) -> dict[str, Any]:
        return {
            "type": "message_action",
            "callback_id": callback_id,
            "trigger_id": f"trig{next(self._events)}",
            "team": {"id": TEAM},
            "user": {"id": user},
            "channel": {"id": channel},
            "message": {"type": "message", "ts": ts, "thread_ts": thread_ts, "text": "x"},
            "response_url": f"{self.slack.response_url_base}{next(self._events)}",
            "api_app_id": "A1",
            "token": "legacy",
        }


def dm(
    text: str, *, ts: str, user: str = "U1", channel: str = "D1", thread_ts: str | None = None
) -> dict[str, Any]:
    event = {
        "type": "message",
        "channel_type": "im",
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def channel_message(
    text: str,
    *,
    ts: str,
    user: str = "U1",
    channel: str = "C1",
    thread_ts: str | None = None,
    mention: bool = False,
    kind: str = "message",
) -> dict[str, Any]:
    event = {
        "type": kind,
        "channel": channel,
        "user": user,
        "ts": ts,
        "text": f"<@UBOT> {text}" if mention else text,
    }
    if kind == "message":
        event["channel_type"] = "channel"
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event
