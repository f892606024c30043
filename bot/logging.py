"""Structured JSON logs on stderr, with Slack tokens and secrets redacted."""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any

# Slack tokens (xoxb-, xoxp-, xapp-, ...) and bearer headers never reach a log line.
_SECRET = re.compile(r"\b(xox[abposr]-[A-Za-z0-9-]+|xapp-[A-Za-z0-9-]+)|(Bearer\s+)\S+")
_STANDARD = set(vars(logging.makeLogRecord({})))


def redact(text: str) -> str:
    """`text` with anything that looks like a Slack token or bearer credential masked."""
    return _SECRET.sub(lambda m: (m.group(2) or "") + "[redacted]", text)


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
                payload[key] = (
                    value if isinstance(value, (int, float, bool)) else redact(str(value))
                )
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
