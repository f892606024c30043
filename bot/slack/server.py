"""Running the bot: HTTP mode and Socket Mode, each until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import logging
import resource
import signal
from collections.abc import Awaitable, Callable

from aiohttp import web
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from agents.runner import Runner
from bot import garbage_collector
from bot.config import Settings, secret
from bot.digests.scheduler import start_scheduler
from bot.ops.heartbeat import add_heartbeat
from bot.slack.app import build_bolt_app, build_web_app, create_services
from bot.slack.client import SlackClient
from bot.slack.connection_guard import ConnectionGuard
from bot.slack.services import BotServices
from bot.threads.admission import PriorityLimit
from bot.threads.loop_lag import LoopLagGate
from bot.threads.summaries import Summarizer
from bot.wiring import build_digest_job
from storage.database import Database

log = logging.getLogger(__name__)


async def wait_for_signal() -> None:
    """Return on the first SIGTERM or SIGINT."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


class WebFront:
    """A web app being served through a `ConnectionGuard` (see `start_web`)."""

    def __init__(
        self, runner: web.AppRunner, listener: asyncio.Server, guard: ConnectionGuard
    ) -> None:
        self.runner = runner
        self.listener = listener
        self.guard = guard

    @property
    def port(self) -> int:
        """The port it listens on (the one chosen when asked for port 0)."""
        return int(self.listener.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening, shut the app down (its `on_shutdown` hooks drain the worker),
        then close whatever connection is left."""
        self.listener.close()
        await self.runner.cleanup()
        self.guard.close_all()
        await self.listener.wait_closed()


def default_max_connections() -> int:
    """Half the process's file-descriptor limit (`HTTP_MAX_CONNECTIONS` unset)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 65_536
    return max(64, soft // 2)


async def start_web(
    web_app: web.Application, settings: Settings, *, host: str, port: int
) -> WebFront:
    """Start `web_app` (its `on_startup` hooks run first) and listen on `host:port`, with
    connections capped and timed (`ConnectionGuard`: `HTTP_MAX_CONNECTIONS`,
    `HTTP_MAX_CONNECTIONS_PER_PEER`, `HTTP_REQUEST_TIMEOUT_SECONDS`,
    `HTTP_KEEPALIVE_SECONDS`), aiohttp's keep-alive no longer than the guard's."""
    max_connections = settings.http_max_connections or default_max_connections()
    guard = ConnectionGuard(
        max_connections=max_connections,
        max_per_peer=settings.http_max_connections_per_peer or max(1, max_connections // 8),
        request_timeout=settings.http_request_timeout_seconds,
        keepalive_timeout=settings.http_keepalive_seconds,
    )
    web_app.middlewares.append(guard.middleware)
    runner = web.AppRunner(
        web_app,
        access_log=None,
        shutdown_timeout=5,
        keepalive_timeout=settings.http_keepalive_seconds,
    )
    await runner.setup()
    assert runner.server is not None  # set up
    listener = await guard.listen(runner.server, host, port)
    return WebFront(runner, listener, guard)


async def run_web(
    web_app: web.Application,
    settings: Settings,
    stop: Awaitable[None] | None = None,
    *,
    socket_mode: bool = False,
    tune_collector: bool = True,
) -> None:
    """Serve `web_app` on `settings.port` (`start_web`) until `stop` (default: a signal)
    completes; in Socket Mode on loopback unless `HOST` opens it (`Settings.listen_host`).
    Once the app has started, the garbage collector is set for serving
    (`bot.garbage_collector`) unless `tune_collector` is False.
    """
    host = settings.listen_host(socket_mode=socket_mode)
    front = await start_web(web_app, settings, host=host, port=settings.port)
    if tune_collector:
        # Start-up (the app's on_startup hooks included) is done; nothing waits yet.
        garbage_collector.tune(settings.gc_young_threshold)
    log.info("listening", extra={"host": host, "port": settings.port})
    try:
        await (stop if stop is not None else wait_for_signal())
    finally:
        await front.stop()


async def serve_http(
    settings: Settings,
    *,
    db: Database | None = None,
    runner: Runner | None = None,
    summarizer: Summarizer | None = None,
    limit: PriorityLimit | None = None,
    gate: LoopLagGate | None = None,
) -> None:
    """HTTP mode: signed requests on POST /slack/events (storage and engine built from
    settings unless given)."""
    services, slack = await create_services(
        settings, db=db, runner=runner, summarizer=summarizer, limit=limit, gate=gate
    )
    scheduler = start_jobs(services)
    bolt = build_bolt_app(services)
    on_close = _closer(services, slack, scheduler)
    await run_web(build_web_app(services, bolt, on_close=on_close), settings)


async def serve_socket(
    settings: Settings,
    *,
    db: Database | None = None,
    runner: Runner | None = None,
    summarizer: Summarizer | None = None,
    limit: PriorityLimit | None = None,
    gate: LoopLagGate | None = None,
) -> None:
    """Socket Mode: events over a WebSocket; /healthz and /metrics still on PORT."""
    services, slack = await create_services(
        settings, db=db, runner=runner, summarizer=summarizer, limit=limit, gate=gate
    )
    scheduler = start_jobs(services)
    bolt = build_bolt_app(services)
    handler = socket_handler(bolt, settings, services.client)

    async def close() -> None:
        await handler.close_async()
        await _closer(services, slack, scheduler)()

    web_app = build_web_app(
        services, bolt, http_events=False, extra_health=handler.client.is_connected, on_close=close
    )
    await handler.connect_async()
    await run_web(web_app, settings, socket_mode=True)


def socket_handler(
    bolt: AsyncApp, settings: Settings, client: AsyncWebClient
) -> AsyncSocketModeHandler:
    """Bolt's aiohttp Socket Mode handler on the shared Web API client."""
    return AsyncSocketModeHandler(
        bolt, app_token=secret(settings.slack_app_token), web_client=client
    )


def start_jobs(services: BotServices) -> AsyncIOScheduler:
    """The digest scheduler, delivery expiry, and the heartbeat with its takeover sweep,
    on this process's event loop; digests share the worker's slots (replies first)."""
    job = build_digest_job(
        services.settings,
        services.db,
        services.summarizer,
        services.client,
        limit=services.worker.limit,
        root=services.runner.agent,
    )
    scheduler = start_scheduler(services.settings, services.db, job)
    add_heartbeat(scheduler, services)
    return scheduler


def _closer(
    services: BotServices, slack: SlackClient, scheduler: AsyncIOScheduler
) -> Callable[[], Awaitable[None]]:
    async def close() -> None:
        scheduler.shutdown(wait=False)
        await slack.close()
        await services.db.close()

    return close
