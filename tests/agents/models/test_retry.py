"""Classification of model-call failures and the backoff schedule."""

from __future__ import annotations

import email.utils
from types import SimpleNamespace

import pytest

from agents.models import retry as retry_module
from agents.models.retry import RetryPolicy, classify, parse_retry_after


class HttpError(Exception):
    """An error shaped like litellm's: it carries the HTTP status and response headers."""

    def __init__(self, status_code: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code
        self.litellm_response_headers = headers or {}


@pytest.mark.parametrize(
    ("error", "code", "transient"),
    [
        (HttpError(408), "model_timeout", True),
        (TimeoutError(), "model_timeout", True),
        (HttpError(429), "rate_limited", True),
        (HttpError(500), "model_unavailable", True),
        (HttpError(503), "model_unavailable", True),
        (ConnectionResetError(), "model_unavailable", True),
        (HttpError(400), "model_bad_request", False),
        (HttpError(401), "model_auth_failed", False),
        (HttpError(404), "model_not_found", False),
        (ValueError("odd"), "model_error", False),
    ],
)
def test_retry_classify_maps_status_to_code(error: Exception, code: str, transient: bool) -> None:
    failure = classify(error)
    assert (failure.code, failure.transient) == (code, transient)


def test_retry_classify_reads_retry_after() -> None:
    assert classify(HttpError(429, {"Retry-After": "7"})).retry_after == 7.0


def test_retry_parse_retry_after_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None
    # An HTTP date counts from the clock's now, held still here.
    now = 1_700_000_000.0
    monkeypatch.setattr(retry_module, "time", SimpleNamespace(time=lambda: now))
    later = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"Retry-After": later}) == 30.0
    earlier = email.utils.formatdate(now - 30, usegmt=True)
    assert parse_retry_after({"Retry-After": earlier}) == 0.0


def test_retry_delay_grows_with_jitter_and_respects_bounds() -> None:
    policy = RetryPolicy(max_retries=5, backoff_base=1.0, backoff_max=4.0)
    for retry, (low, high) in enumerate([(0.5, 1.0), (1.0, 2.0), (2.0, 4.0), (2.0, 4.0)]):
        delays = {policy.delay(retry) for _ in range(50)}
        assert all(low <= d <= high for d in delays)
        assert len(delays) > 1
    assert policy.delay(0, retry_after=3.0) == 3.0
    assert policy.worth_waiting(4.0)
    assert not policy.worth_waiting(60.0)
