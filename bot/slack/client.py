"""The one Slack Web API client: a shared aiohttp session and slack_sdk's retry handlers."""

from __future__ import annotations

import aiohttp
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings, secret


def retry_handlers(max_retries: int, *, backoff: float = 0.5) -> list[AsyncRetryHandler]:
    """Retries for 429 (honouring `Retry-After`), 5xx and dropped connections."""
    interval = BackoffRetryIntervalCalculator(backoff_factor=backoff)
    return [
        AsyncRateLimitErrorRetryHandler(max_retry_count=max_retries),
        AsyncServerErrorRetryHandler(max_retry_count=max_retries, interval_calculator=interval),
        AsyncConnectionErrorRetryHandler(max_retry_count=max_retries, interval_calculator=interval),
    ]


class SlackClient:
    """Owns the shared `aiohttp.ClientSession` and the `AsyncWebClient` built on it.

    slack_sdk opens a new aiohttp session per call unless given one; sharing one keeps
    connections alive and cuts CPU per event. Create inside a running event loop and
    `await close()` on shutdown.
    """

    def __init__(self, settings: Settings, *, retry_backoff: float = 0.5) -> None:
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=100), timeout=aiohttp.ClientTimeout(total=30)
        )
        self.web = AsyncWebClient(
            token=secret(settings.slack_bot_token),
            base_url=settings.slack_api_url,
            session=self.session,
            retry_handlers=retry_handlers(settings.slack_retry_count, backoff=retry_backoff),
        )

    async def close(self) -> None:
        await self.session.close()
