"""Whether a bot is running on a SQLite file: a lock file the bot holds while it runs.

SQLite has one host and no server to ask, so a running bot holds a shared `flock` on
`<database>.running` from start to exit (the lock dies with the process, even on
SIGKILL). Operator commands that must not race it (`forget`) try to take the lock
exclusively and refuse when they cannot. PostgreSQL needs none of this: its writes are
transactions that a running bot's writes cannot interleave with.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from storage.engine import normalize_url


class BotRunningError(RuntimeError):
    """A bot is running on the same SQLite file."""


def _lock_path(database_url: str) -> Path | None:
    url = normalize_url(database_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(f"{url.database}.running")


@contextmanager
def _locked(database_url: str, operation: int) -> Iterator[None]:
    path = _lock_path(database_url)
    if path is None:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, operation)
        yield
    finally:
        os.close(fd)


@contextmanager
def bot_running(database_url: str) -> Iterator[None]:
    """Mark a bot as running on `database_url` for the duration of the block."""
    with _locked(database_url, fcntl.LOCK_SH):
        yield


@contextmanager
def no_bot_running(database_url: str) -> Iterator[None]:
    """Hold off bots for the block; raises `BotRunningError` when one is running."""
    try:
        with _locked(database_url, fcntl.LOCK_EX | fcntl.LOCK_NB):
            yield
    except BlockingIOError:
        raise BotRunningError(
            f"a bot is running on {normalize_url(database_url).database}; stop it first "
            "(on SQLite, forget must not race it)"
        ) from None
