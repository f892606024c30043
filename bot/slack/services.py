"""The collaborators every Slack handler needs, built once per process."""

from __future__ import annotations

from dataclasses import dataclass, field

from slack_sdk.web.async_client import AsyncWebClient

from agents.runner import Runner
from bot.config import Settings
from bot.slack.dedupe import DeliveryFilter
from bot.threads.summaries import Summarizer
from bot.threads.worker import ThreadWorker
from storage.database import Database


@dataclass
class BotServices:
    """Settings, the Web API client, storage, the runner, the summariser, and the
    background worker.

    `owner` is this process's identity (`bot.wiring.process_owner`): it owns the messages
    the process accepted (`storage.delivery.inflight`) and the digest leases it holds.
    """

    settings: Settings
    client: AsyncWebClient
    db: Database
    runner: Runner
    worker: ThreadWorker
    summarizer: Summarizer
    owner: str
    deliveries: DeliveryFilter = field(default_factory=DeliveryFilter)
