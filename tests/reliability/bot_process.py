"""The bot as a real process for crash tests: `python -m tests.reliability.bot_process`.

Configured like `support-bot serve`, from the environment (SLACK_*, DATABASE_URL, MODEL,
MODEL_API_BASE, PORT, MAX_CONCURRENT_INVOCATIONS, HEARTBEAT_SECONDS, ...), but built from
parts this test owns: the default support tree on `LiteLlmModel` (pointed at a fake
OpenAI server), the heartbeat with its takeover sweep, and no digest scheduler and no
summariser, so it only depends on the bot's serving path.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from agents.models.base import Model
from agents.runner import Runner
from agents.tree import build_support_tree
from bot.config import Settings, secret
from bot.event_loop import run
from bot.logging import configure_logging
from bot.ops.heartbeat import add_heartbeat
from bot.slack.app import build_bolt_app, build_web_app, create_services
from bot.slack.message_ts import SlackTsPlugin
from bot.slack.server import run_web
from bot.threads.speaker import SpeakerPlugin
from storage.database import Database


async def serve() -> None:
    settings = Settings(_env_file=None)
    configure_logging(settings.log_level)
    db = await Database.open(settings.database_url)

    def model_factory(name: str) -> Model:
        from agents.models.litellm_model import LiteLlmModel

        return LiteLlmModel(
            name,
            api_base=settings.model_api_base,
            api_key=secret(settings.model_api_key),
            timeout=settings.model_timeout_seconds,
        )

    runner = Runner(
        agent=build_support_tree(path=settings.agent_tree_file, model=settings.model),
        app_name=settings.app_name,
        session_service=db.sessions,
        model_factory=model_factory,
        plugins=[SlackTsPlugin(), SpeakerPlugin()],
    )
    services, slack = await create_services(
        settings, db=db, runner=runner, summarizer=object(), retry_backoff=0.05
    )

    scheduler = AsyncIOScheduler()
    add_heartbeat(scheduler, services)
    scheduler.start()

    async def close() -> None:
        scheduler.shutdown(wait=False)
        await slack.close()
        await db.close()

    await run_web(build_web_app(services, build_bolt_app(services), on_close=close), settings)


if __name__ == "__main__":
    # The loop `support-bot serve` runs on (EVENT_LOOP, uvloop by default).
    run(serve(), Settings(_env_file=None).event_loop)
    sys.exit(0)
