"""Builds the Bolt app and the aiohttp web app around it (/slack/events, /healthz, /metrics)."""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.signature import SignatureVerifier

from agents.metrics import REGISTRY
from agents.runner import Runner
from bot.config import Settings, secret
from bot.event_loop import running_loop_name
from bot.logging import library_logger
from bot.slack import listeners, payloads
from bot.slack.client import SlackClient
from bot.slack.recovery import recover
from bot.slack.services import BotServices
from bot.threads.admission import PriorityLimit
from bot.threads.loop_lag import LoopLagGate
from bot.threads.summaries import Summarizer
from bot.threads.worker import ThreadWorker
from bot.wiring import build_runner, build_summarizer, loop_lag_gate, process_owner, work_limit
from storage.database import Database

log = logging.getLogger(__name__)

REGISTRY.describe(
    "support_bot_background_jobs", "gauge", "Messages queued or running in the thread worker"
)

EVENTS_PATH = "/slack/events"
HealthCheck = Callable[[], Awaitable[bool]]

SERVICES_KEY = web.AppKey("services", BotServices)
BOLT_KEY = web.AppKey("bolt", AsyncApp)


class SupportBoltApp(AsyncApp):
    """Bolt's app, releasing each request's context once its listeners have run.

    Bolt builds a context per request whose assistant helpers point back at it (the
    thread-context store holds the context that holds the store), so every request left
    a cycle of some fifty objects that only the garbage collector could free: under load
    that was most of the young generation, and each collection held the event loop
    while it walked them. Listeners run before the response here
    (`process_before_response=True`) and keep only the helpers they take as arguments
    (`say`, `set_status`, `respond`, ...), which do not refer to the context; so clearing
    the context after dispatch frees it, and them, by reference counting.
    """

    async def async_dispatch(self, req: AsyncBoltRequest) -> BoltResponse:
        try:
            return await super().async_dispatch(req)
        finally:
            req.context.clear()


def build_bolt_app(services: BotServices) -> AsyncApp:
    """The Bolt app with every listener registered.

    Bolt does not check signatures: in HTTP mode `build_web_app` checks each request's
    once, before anything parses it, and Socket Mode events arrive on the WebSocket the
    app token opened. `process_before_response=True` makes Bolt run our (instant)
    listener inline before answering, so ordering within a thread follows arrival order
    and no request waits in Bolt's 10 ms ack-polling loop; the slow work runs in
    `services.worker`'s tasks.
    """
    app = SupportBoltApp(
        client=services.client,
        signing_secret="",
        process_before_response=True,
        request_verification_enabled=False,
        logger=library_logger("slack_bolt"),
    )
    listeners.register(app, services)
    return app


async def create_services(
    settings: Settings,
    *,
    db: Database | None = None,
    runner: Runner | None = None,
    summarizer: Summarizer | None = None,
    retry_backoff: float = 0.5,
    limit: PriorityLimit | None = None,
    gate: LoopLagGate | None = None,
) -> tuple[BotServices, SlackClient]:
    """Open storage and build the runner and summariser from settings, unless given.
    `limit` is the shared slot count a given runner's window hooks were built under,
    with its loop-lag `gate` (`bot.wiring.work_limit`)."""
    slack = SlackClient(settings, retry_backoff=retry_backoff)
    if db is None:
        db = await Database.open(settings.database_url)
    gate = loop_lag_gate(settings) if gate is None else gate
    limit = work_limit(settings, gate) if limit is None else limit
    services = BotServices(
        settings=settings,
        client=slack.web,
        db=db,
        runner=build_runner(settings, db, limit=limit) if runner is None else runner,
        worker=ThreadWorker(
            max_concurrent=settings.max_concurrent_invocations,
            max_queue=settings.max_thread_queue,
            gate=gate,
            limit=limit,
        ),
        summarizer=build_summarizer(settings, db) if summarizer is None else summarizer,
        owner=process_owner(),
    )
    return services, slack


def build_web_app(
    services: BotServices,
    bolt: AsyncApp,
    *,
    http_events: bool = True,
    extra_health: HealthCheck | None = None,
    on_close: Callable[[], Awaitable[None]] | None = None,
) -> web.Application:
    """The aiohttp app: Slack events (HTTP mode only), health and metrics (in HTTP mode
    to `OPS_ALLOW_FROM` peers only), graceful drain."""
    app = web.Application()
    app[SERVICES_KEY] = services
    app[BOLT_KEY] = bolt

    # HTTP mode only: Socket Mode has no signed requests, and no signing secret.
    verifier = _verifier(services.settings) if http_events else None

    async def events(request: web.Request) -> web.Response:
        assert verifier is not None
        raw, headers = await request.read(), dict(request.headers)
        # The one signature check (Bolt's is off), before parsing: unsigned input is
        # never even decoded.
        if not _signed(verifier, raw, headers):
            return web.json_response({"error": "invalid signature"}, status=401)
        try:
            body = raw.decode("utf-8")
            ok = payloads.well_formed(payloads.parse(body, request.content_type))
        except (ValueError, RecursionError):  # not UTF-8, not JSON, nested past the stack
            ok = False
        if not ok:
            # Signed but malformed: the sender's error, refused before Bolt trips on it.
            log.info("malformed Slack payload refused")
            return web.json_response({"error": "malformed payload"}, status=400)
        bolt_request = AsyncBoltRequest(body=body, query=request.query_string, headers={**headers})
        return await to_aiohttp_response(await bolt.async_dispatch(bolt_request))

    allowed = [ipaddress.ip_network(n, strict=False) for n in services.settings.ops_allow_from]

    def private(request: web.Request) -> None:
        # HTTP mode listens where Slack (and anyone) can reach it: health and counters
        # answer only OPS_ALLOW_FROM, loopback by default (docs/http-mode.md). Socket
        # Mode binds loopback already.
        if http_events and not _peer_in(request, allowed):
            raise web.HTTPNotFound()

    async def healthz(request: web.Request) -> web.Response:
        private(request)
        checks = {"database": await _healthy(services.db.healthcheck)}
        if extra_health is not None:
            checks["socket"] = await _healthy(extra_health)
        ok = all(checks.values()) and not services.worker.closed
        body = {"ok": ok, **checks, "event_loop": running_loop_name()}
        return web.json_response(body, status=200 if ok else 503)

    async def metrics(request: web.Request) -> web.Response:
        private(request)
        REGISTRY.set("support_bot_background_jobs", services.worker.pending)
        return web.Response(
            body=REGISTRY.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def startup(_: web.Application) -> None:
        # Alive before anything is accepted, so no peer takes this process's rows.
        await services.db.owners.beat(services.owner, now=time.time())
        # Before the site listens: re-run messages keep their place in their threads.
        await recover(services, startup=True)

    app.on_startup.append(startup)
    if http_events:
        app.router.add_post(EVENTS_PATH, events)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)

    async def shutdown(_: web.Application) -> None:
        await drain(services)
        if on_close is not None:
            await on_close()

    app.on_shutdown.append(shutdown)
    return app


async def drain(services: BotServices) -> None:
    """Stop taking work, finish (or hand back) in-flight invocations, then close."""
    finished = await services.worker.drain(services.settings.shutdown_timeout_seconds)
    await services.runner.drain()
    # Whatever is still in flight is free to a live peer's next sweep at once.
    await services.db.owners.stop(services.owner)
    log.info("drained", extra={"clean": finished})


def _verifier(settings: Settings) -> SignatureVerifier:
    signing_secret = secret(settings.slack_signing_secret)
    if not signing_secret:
        raise ValueError("HTTP mode needs SLACK_SIGNING_SECRET to check Slack's requests")
    return SignatureVerifier(signing_secret)


def _signed(verifier: SignatureVerifier, body: bytes, headers: dict[str, str]) -> bool:
    try:
        return verifier.is_valid_request(body, headers)
    except ValueError:  # a timestamp header that is not a number
        return False


def _peer_in(
    request: web.Request, networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network]
) -> bool:
    """Whether the connection itself comes from one of `networks` (no forwarded header
    counts)."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    if not peer:
        return False
    try:
        address = ipaddress.ip_address(peer[0])
    except ValueError:  # a Unix socket's path
        return False
    return any(address in network for network in networks)


async def _healthy(check: HealthCheck) -> bool:
    try:
        # A check may return nothing (healthy unless it raises) or an explicit bool.
        return (await check()) is not False
    except Exception:
        log.warning("health check failed", exc_info=True)
        return False
