"""Structured JSON logs on stderr, with Slack tokens and secrets redacted."""

from __future__ import annotations

import functools
import json
import logging
import re
import sys
import time
from typing import Any

# Slack tokens (xoxb-, xoxp-, xoxe-, xapp-, ...), model API keys (sk-..., sk-ant-...),
# bearer and basic authorization headers and the password in a URL
# (postgresql://user:PASSWORD@host) never reach a log line. Groups 1 and 2 are
# prefixes kept in front of the mask.
_SECRET = re.compile(
    r"\b(?:xox[abeposr](?:\.[A-Za-z0-9]+)?-[A-Za-z0-9-]+|xapp-[A-Za-z0-9-]+"
    r"|sk-[A-Za-z0-9_-]{8,})"
    r"|((?:Bearer|Basic)\s+)\S+"
    # Bounded, and a scheme only where one can start: unbounded repeats here made masking
    # quadratic, so a long signed body took a second to log.
    r"|((?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s:/@]{0,256}:)[^\s/@]{1,256}(?=@)"
)
# Every credential `_SECRET` masks contains one of these: a line without any of them is
# logged as it is, without running the expression (most lines, on the hot path).
_SECRET_MARKER = re.compile(r"xox|xapp-|sk-|Bearer|Basic|://")
_STANDARD = set(vars(logging.makeLogRecord({})))


# Fields whose values are credentials whatever they look like.
_SECRET_KEY = re.compile(
    r"(^|[_-])(authorization|token|secret|password|api[_-]?key|cookie)$", re.IGNORECASE
)


@functools.lru_cache(maxsize=1024)
def _is_secret_key(key: str) -> bool:
    return _SECRET_KEY.search(key) is not None


def _field(key: str, value: Any) -> Any:
    """A JSON-ready `extra=` value: None stays null, containers stay structured, every
    string is redacted, and credential-named keys are masked outright."""
    if value is not None and _is_secret_key(key):
        return "[redacted]"
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_field("", v) for v in value]
    if isinstance(value, dict):
        return {str(k): _field(str(k), v) for k, v in value.items()}
    return redact(str(value))


def redact(text: str) -> str:
    """`text` with anything that looks like a Slack token, a bearer or basic credential,
    or a URL's password masked."""
    if not _SECRET_MARKER.search(text):
        return text
    return _SECRET.sub(lambda m: (m.group(1) or m.group(2) or "") + "[redacted]", text)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and any `extra=` fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": redact(record.getMessage()),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                payload[key] = _field(key, value)
        if record.exc_info:
            payload["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(payload, default=str)


def configure_logging(level: str = "INFO") -> None:
    """Route the root logger to stderr as JSON. Idempotent."""
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.Formatter.converter = time.gmtime


def library_logger(name: str) -> logging.Logger:
    """The logger `name`, its own level set to the one it inherits now (the root's, as
    `configure_logging` set it).

    slack_sdk and slack_bolt test `logger.level <= DEBUG` (the logger's own level, not
    the effective one) before building their debug lines, and an unset level is 0: so
    every Web API call formatted its whole request and response, and every Bolt request
    its middleware names, only for the lines to be dropped (the load benchmark's profile).
    """
    logger = logging.getLogger(name)
    if logger.level == logging.NOTSET:
        logger.setLevel(logger.getEffectiveLevel())
    return logger
