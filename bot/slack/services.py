"""The collaborators every Slack handler needs, built once per process."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings
from bot.slack.dedupe import DeliveryFilter
from bot.threads.worker import ThreadWorker


@dataclass
class BotServices:
    """Settings, the Web API client, storage, the runner, and the background worker.

    `db` is a `storage.database.Database`; `runner` an `agents.runner.Runner`;
    `summarizer` answers `summarize(session)` with a summary or a no-summary (see
    `bot.threads.summaries`). They are typed loosely so the bot can be built with test doubles
    of the same shape.
    """

    settings: Settings
    client: AsyncWebClient
    db: Any
    runner: Any
    worker: ThreadWorker
    summarizer: Any = None
    deliveries: DeliveryFilter = field(default_factory=DeliveryFilter)
    agent_names: tuple[str, ...] = ()
    bot_user_id: str | None = None
    # This process, as the owner of the messages it has accepted (see storage.inflight).
    owner: str = field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    )
