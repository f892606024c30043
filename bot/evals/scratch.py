"""A scratch database for an evaluation: a SQLite file in a temporary folder, removed
afterwards, so an evaluation never writes to the bot's own database (`DATABASE_URL`)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def scratch_database_url(prefix: str) -> Iterator[str]:
    """The URL of a new SQLite file that lives as long as the `with` block."""
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield f"sqlite+aiosqlite:///{Path(folder) / 'knowledge.db'}"
