"""The apps the Slack benchmarks run, each as its own process, as in production:
`python bench/load_apps.py bot|bare|bare_stream|multi`.

- `bot`: the support bot's HTTP app (Bolt, durable acceptance, per-thread workers, SQLite
  at DATABASE_URL, the fake Web API at SLACK_API_URL) with a one-agent tree whose model
  answers after MODEL_DELAY seconds, run as `build_runner` ships it otherwise: compaction
  after each invocation (`COMPACTION_INTERVAL`, on a sleepy summariser that answers after
  COMPACTION_DELAY seconds, the 500 ms summariser of `bench/compaction_tokens.py` by
  default), the Slack and speaker plugins, and one slot count with its loop-lag gate
  shared by replies and compaction; it logs JSON at LOG_LEVEL (INFO by default) as
  `support-bot serve` does.
- `bare`: the baseline, a bare Bolt app that acks, then after the same MODEL_DELAY posts
  an echo through one shared aiohttp session (the cheapest app that does the same job).
- `bare_stream`: a bare Bolt app that makes the Slack calls the bot's replies make (the
  stream, its first text and its stop; the panel status set and cleared) and nothing
  else, for `bench/slack_load.py --peer stream`.
- `multi`: `bot` as `support-bot serve` runs it, with its background jobs (heartbeat and
  takeover sweep, idle-thread digests on a scripted summary model), for
  `bench/multiprocess.py`'s processes sharing one PostgreSQL.

Each listens on PORT and answers `GET /healthz` once ready.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from agents.llm.agent import LlmAgent
from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ModelProfile
from agents.models.scripted import ScriptedModel
from agents.runner import Runner
from agents.summary import SummaryService
from bot.config import Settings, secret
from bot.event_loop import run
from bot.logging import configure_logging
from bot.slack.app import build_bolt_app, build_web_app, create_services
from bot.slack.message_ts import SlackTsPlugin
from bot.slack.render.blocks import feedback_block, reply_context
from bot.slack.server import run_web, start_jobs
from bot.slack.streaming import FIRST_TEXT_WAIT_S, reply_metadata
from bot.threads.admission import PriorityLimit
from bot.threads.speaker import SpeakerPlugin
from bot.wiring import compaction_hook, loop_lag_gate, work_limit
from storage.database import Database


class SleepyModel:
    """Answers after `delay` seconds, echoing the user's message id; streamed, the answer
    comes as `DELTAS` pieces spread over the delay, as a model writes tokens."""

    name = "sleepy"
    profile = ModelProfile()
    DELTAS = 8

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def generate(self, request: LlmRequest) -> LlmResponse:
        await asyncio.sleep(self.delay)
        return LlmResponse.from_text(f"reply to {request.contents[-1].text}")

    async def generate_stream(self, request: LlmRequest) -> AsyncIterator[LlmResponse]:
        text = f"reply to {request.contents[-1].text}"
        size = -(-len(text) // self.DELTAS)
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        # The whole delay, however many pieces a short text makes: a streamed reply
        # takes as long as a whole one.
        for piece in pieces:
            await asyncio.sleep(self.delay / len(pieces))
            yield LlmResponse.from_text(piece, partial=True)
        yield LlmResponse.from_text(text)


def shipped_runner(settings: Settings, db: Database, limit: PriorityLimit) -> Runner:
    """A one-agent tree on the sleepy model, with what `bot.wiring.build_runner` adds to
    every tree: compaction after each invocation (so a thread's history stays bounded, as
    in production) and the Slack and speaker plugins."""
    model = SleepyModel(float(os.environ["MODEL_DELAY"]))
    summariser = SleepyModel(float(os.environ.get("COMPACTION_DELAY", "0.5")))
    return Runner(
        agent=LlmAgent(name="support_supervisor", model=model),
        app_name=settings.app_name,
        session_service=db.sessions,
        after_invocation=[compaction_hook(settings, db.sessions, summariser, limit)],
        plugins=[SlackTsPlugin(), SpeakerPlugin()],
        max_message_chars=settings.max_model_message_chars,
    )


async def bot(settings: Settings) -> None:
    db = await Database.open(settings.database_url)
    gate = loop_lag_gate(settings)
    limit = work_limit(settings, gate)
    services, slack = await create_services(
        settings,
        db=db,
        runner=shipped_runner(settings, db, limit),
        summarizer=object(),
        limit=limit,
        gate=gate,
    )

    async def close() -> None:
        await slack.close()
        await db.close()

    await run_web(build_web_app(services, build_bolt_app(services), on_close=close), settings)


def bench_record(request: LlmRequest) -> str:
    """A valid handoff record for a benchmark thread, citing its first message."""
    said = " ".join(c.text for c in request.contents if c.text)
    first = re.search(r"thread \d+ message 0", said)
    fact = f"The user wrote {first.group(0) if first else 'numbered messages'}"
    return json.dumps({"goal": "Answer the user's numbered messages",
                       "facts": [{"text": fact, "sources": ["e1"]}], "decisions": [],
                       "commitments": [], "open_questions": []})  # fmt: skip


async def multi(settings: Settings) -> None:
    db = await Database.open(settings.database_url)
    gate = loop_lag_gate(settings)
    limit = work_limit(settings, gate)
    summarizer = SummaryService(ScriptedModel([bench_record] * 100_000))
    services, slack = await create_services(
        settings,
        db=db,
        runner=shipped_runner(settings, db, limit),
        summarizer=summarizer,
        limit=limit,
        gate=gate,
    )
    scheduler = start_jobs(services)

    async def close() -> None:
        scheduler.shutdown(wait=False)
        await slack.close()
        await db.close()

    await run_web(build_web_app(services, build_bolt_app(services), on_close=close), settings)


Answer = Callable[[AsyncWebClient, dict[str, Any], str | None], Awaitable[None]]


async def run_bare(settings: Settings, answer: Answer) -> None:
    """A bare Bolt app on one shared aiohttp session: it acks each message event and
    runs `answer(client, event, team_id)` in a task of its own."""
    session = aiohttp.ClientSession()
    client = AsyncWebClient(
        token=secret(settings.slack_bot_token), base_url=settings.slack_api_url, session=session
    )
    bolt = AsyncApp(client=client, signing_secret=secret(settings.slack_signing_secret))
    tasks: set[asyncio.Task[None]] = set()

    @bolt.event("message")
    async def on_message(event: dict[str, Any], context: dict[str, Any]) -> None:
        task = asyncio.create_task(answer(client, event, context.get("team_id")))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def events(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await bolt.async_dispatch(await to_bolt_request(request)))

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/slack/events", events)
    app.router.add_get("/healthz", healthz)
    # A bare Bolt app runs with Python's garbage-collector defaults.
    await run_web(app, settings, tune_collector=False)


async def bare(settings: Settings) -> None:
    delay = float(os.environ["MODEL_DELAY"])

    async def echo(client: AsyncWebClient, event: dict[str, Any], _team: str | None) -> None:
        await asyncio.sleep(delay)
        await client.chat_postMessage(
            channel=event["channel"],
            thread_ts=event.get("thread_ts") or event["ts"],
            text=f"echo {event['text']}",
        )

    await run_bare(settings, echo)


async def bare_stream(settings: Settings) -> None:
    """A bare Bolt app that answers with the Slack calls the bot makes, and nothing else:
    no database, no agents. In a panel thread (a DM thread reply) the loading status is
    set at once; the stream is started with the first text (about when the bot's would
    be: the sleepy model's first piece, then `FIRST_TEXT_WAIT_S`), and `chat.stopStream`
    carries the rest with the bot's context line, feedback buttons and metadata; the
    stream's post clears the status. Against it, the bot's CPU ratio is its cost beyond
    the calls its replies need."""
    delay = float(os.environ["MODEL_DELAY"])
    first_at = delay / SleepyModel.DELTAS + FIRST_TEXT_WAIT_S

    async def stream(client: AsyncWebClient, event: dict[str, Any], team: str | None) -> None:
        channel, text = event["channel"], f"echo {event['text']}"
        if event.get("thread_ts") is not None:
            await client.assistant_threads_setStatus(
                channel_id=channel, thread_ts=event["thread_ts"], status="is working on it…"
            )
        await asyncio.sleep(first_at)
        first, rest = text[:5], text[5:]
        start = await client.chat_startStream(
            channel=channel,
            thread_ts=event.get("thread_ts") or event["ts"],
            recipient_user_id=event.get("user"),
            recipient_team_id=team,
            task_display_mode="timeline",
            chunks=[{"type": "markdown_text", "text": first}],
        )
        await asyncio.sleep(delay - first_at)
        await client.chat_stopStream(
            channel=channel,
            ts=str(start["ts"]),
            chunks=[{"type": "markdown_text", "text": rest}],
            blocks=[reply_context("echo", []), feedback_block("e1")],
            metadata=reply_metadata("echo"),
        )

    await run_bare(settings, stream)


if __name__ == "__main__":
    which = sys.argv[1]
    config = Settings(_env_file=None)
    bare_app = which.startswith("bare")
    if not bare_app:
        # Logs as `support-bot serve` writes them; a bare Bolt app configures nothing.
        configure_logging(config.log_level)
    apps = {"bot": bot, "bare": bare, "bare_stream": bare_stream, "multi": multi}
    # The bot on the loop it ships with (EVENT_LOOP, the standard library's by default);
    # the bare app on the standard library's too, as a bare Bolt app runs
    # (BARE_EVENT_LOOP=uvloop puts it on uvloop).
    name = os.environ.get("BARE_EVENT_LOOP", "asyncio") if bare_app else config.event_loop
    run(apps[which](config), "uvloop" if name == "uvloop" else "asyncio")
