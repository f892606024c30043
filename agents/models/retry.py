"""Which model-call failures are worth retrying, and how long to wait before the next try.

Errors are classified by their HTTP status (litellm's exceptions all carry one, and
`litellm.Timeout` is 408), so this module never imports litellm.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_UNAVAILABLE_NAMES = ("APIConnectionError", "ServiceUnavailableError", "BadGatewayError")


@dataclass(frozen=True)
class Failure:
    """A classified model-call error: a `ModelError` code, and whether to try again."""

    code: str
    transient: bool
    message: str
    status: int | None = None
    retry_after: float | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter.

    `max_retries` retries follow the first attempt. The n-th retry waits between half and
    all of `backoff_base * 2**n`, capped at `backoff_max`; a server's `Retry-After` is a
    floor. A `Retry-After` longer than `backoff_max` is not worth waiting for in a chat,
    so the caller gives up at once.
    """

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 30.0

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (0 for the first retry)."""
        ceiling = min(self.backoff_max, self.backoff_base * (2**retry))
        wait = ceiling / 2 + random.uniform(0, ceiling / 2)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return wait

    def worth_waiting(self, retry_after: float | None) -> bool:
        """False when the server asks us to wait longer than we ever would."""
        return retry_after is None or retry_after <= self.backoff_max


def classify(exc: BaseException) -> Failure:
    """Map an exception from a model call to a `Failure`."""
    name = type(exc).__name__
    message = str(exc)[:500]
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    if isinstance(exc, TimeoutError) or status == 408 or name == "Timeout":
        return Failure("model_timeout", True, message, status)
    if status == 429:
        return Failure("rate_limited", True, message, status, retry_after_from(exc))
    if name in _UNAVAILABLE_NAMES or (status is not None and status >= 500):
        return Failure("model_unavailable", True, message, status, retry_after_from(exc))
    if isinstance(exc, ConnectionError | OSError) and status is None:
        return Failure("model_unavailable", True, message)
    if name == "ContextWindowExceededError":
        return Failure("context_window_exceeded", False, message, status)
    if status in (401, 403):
        return Failure("model_auth_failed", False, message, status)
    if status == 404:
        return Failure("model_not_found", False, message, status)
    if status is not None and 400 <= status < 500:
        return Failure("model_bad_request", False, message, status)
    return Failure("model_error", False, message, status)


def retry_after_from(exc: BaseException) -> float | None:
    """The `Retry-After` the server sent with this error, in seconds, if any."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if headers is not None:
            seconds = parse_retry_after(headers)
            if seconds is not None:
                return seconds
    return None


def parse_retry_after(headers: Mapping[str, Any]) -> float | None:
    """`retry-after-ms`, or `Retry-After` as seconds or an HTTP date; None if absent or bad."""
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
