"""The one Slack Web API client: a shared aiohttp session and the one retry policy.

Every Web API call is retried by slack_sdk's retry handlers, configured here and nowhere
else: 429 after its `Retry-After`, 5xx and "ratelimited"/"fatal_error" bodies and dropped
connections after a capped exponential backoff. With the default `SLACK_RETRY_COUNT` a
call keeps trying for about a minute and a half, so a Slack outage delays a reply rather
than losing it.
"""

from __future__ import annotations

import logging

import aiohttp
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from agents.metrics import REGISTRY
from bot.config import Settings, secret
from bot.logging import library_logger

log = logging.getLogger(__name__)

RETRIES_METRIC = "support_bot_slack_redeliveries_total"
REGISTRY.describe(RETRIES_METRIC, "counter", "Slack Web API calls sent again, by method")

MAX_INTERVAL_S = 30.0
# Error bodies that say "try again later" (Slack may send them with a 200 or a 5xx).
TRANSIENT_ERRORS = frozenset(
    {"ratelimited", "fatal_error", "internal_error", "service_unavailable"}
)


class CappedBackoff(BackoffRetryIntervalCalculator):
    """slack_sdk's exponential backoff with jitter, never waiting more than `cap` seconds."""

    def __init__(self, backoff_factor: float, cap: float = MAX_INTERVAL_S) -> None:
        super().__init__(backoff_factor=backoff_factor)
        self.cap = cap

    def calculate_sleep_duration(self, current_attempt: int) -> float:
        return min(super().calculate_sleep_duration(current_attempt), self.cap)


class TransientErrorRetryHandler(AsyncRetryHandler):
    """Retries any 5xx (slack_sdk's own handler knows only 500 and 503) and the transient
    error bodies, whatever their status."""

    async def can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if state.current_attempt >= self.max_retry_count:
            return False
        if response is None or response.status_code == 429:
            return False  # 429 belongs to the rate-limit handler, which honours Retry-After
        error_code = (response.body or {}).get("error")
        return response.status_code >= 500 or error_code in TRANSIENT_ERRORS


class _Counted:
    """Counts each retry in `support_bot_slack_redeliveries_total`, by API method."""

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        method = request.url.rsplit("/", 1)[-1]
        REGISTRY.inc(RETRIES_METRIC, call=method)
        cause = type(error).__name__ if error is not None else getattr(response, "status_code", "")
        log.warning("Slack %s failed (%s); retrying", method, cause)
        await super().prepare_for_next_attempt_async(  # type: ignore[misc]
            state=state, request=request, response=response, error=error
        )


class _RateLimit(_Counted, AsyncRateLimitErrorRetryHandler):
    pass


class _Transient(_Counted, TransientErrorRetryHandler):
    pass


class _Connection(_Counted, AsyncConnectionErrorRetryHandler):
    pass


def retry_handlers(max_retries: int, *, backoff: float = 0.5) -> list[AsyncRetryHandler]:
    """Retries for 429 (honouring `Retry-After`), transient errors and dropped connections.

    slack_sdk counts attempts per call across all handlers, so a call is sent at most
    `max_retries + 1` times whichever failures it meets.
    """
    interval = CappedBackoff(backoff)
    connection_errors: list[type[Exception]] = [
        aiohttp.ServerConnectionError,  # refused, disconnected, timed out
        aiohttp.ClientOSError,  # reset by peer
        TimeoutError,  # the session's total timeout
    ]
    return [
        _RateLimit(max_retry_count=max_retries),
        _Transient(max_retry_count=max_retries, interval_calculator=interval),
        _Connection(
            max_retry_count=max_retries, interval_calculator=interval, error_types=connection_errors
        ),
    ]


class SlackClient:
    """Owns the shared `aiohttp.ClientSession` and the `AsyncWebClient` built on it.

    slack_sdk opens a new aiohttp session per call unless given one; sharing one keeps
    connections alive and cuts CPU per event. Create inside a running event loop and
    `await close()` on shutdown.
    """

    def __init__(self, settings: Settings, *, retry_backoff: float = 0.5) -> None:
        # Every slot of MAX_CONCURRENT_INVOCATIONS may have a call out, with aiohttp's
        # default 100 left for the rest: with only the 100, a loaded bot's placeholders
        # queued a second for a connection while the slots waiting on them filled up.
        limit = settings.max_concurrent_invocations + 100
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit), timeout=aiohttp.ClientTimeout(total=30)
        )
        self.web = AsyncWebClient(
            token=secret(settings.slack_bot_token),
            base_url=settings.slack_api_url,
            session=self.session,
            retry_handlers=retry_handlers(settings.slack_retry_count, backoff=retry_backoff),
            logger=library_logger("slack_sdk.web.async_base_client"),
        )

    async def close(self) -> None:
        await self.session.close()
