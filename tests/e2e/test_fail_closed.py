"""End to end: configuration and input that fail closed (issue 17 item 7)."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qs, urlencode

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from pydantic import ValidationError

from agents.models.scripted import ScriptedModel
from agents.summary.service import SummaryService
from bot.cli import cli
from bot.config import Settings
from bot.logging import JsonFormatter
from storage.database import Database
from storage.schema import deliveries, inflight
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, BotHarness, channel_message
from tests.e2e.test_commands import LINK, RECORD, ROOT
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi


@pytest.mark.parametrize(
    "name", ["SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "MODEL_API_KEY"]
)
def test_fail_closed_empty_secret_is_refused_in_one_line(name: str, tmp_path: Any) -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s3cret", name: ""}
    result = CliRunner().invoke(cli, ["serve"], env=env, catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr == f"support-bot: {name} is set but empty; unset it or give it a value\n"
    with pytest.raises(ValidationError):
        Settings(_env_file=None, **{name.lower(): "  "})


def test_fail_closed_socket_mode_keeps_health_and_metrics_on_loopback() -> None:
    socket = Settings(_env_file=None, slack_bot_token="xoxb-1", slack_app_token="xapp-1")
    assert socket.listen_host(socket_mode=True) == "127.0.0.1"
    assert socket.listen_host(socket_mode=False) == "0.0.0.0"
    opened = Settings(_env_file=None, host="0.0.0.0")
    assert opened.listen_host(socket_mode=True) == "0.0.0.0"


def test_fail_closed_logs_mask_model_keys_url_passwords_and_refresh_tokens() -> None:
    secrets = [
        "sk-proj-AbC123dEf456GhI789",
        "sk-ant-api03-AbC123dEf456",
        "xoxe.xoxp-1-Mi0yLTEyMzQ1Njc4OTAxMi00NTY3",
        "xoxe-1-My0xLTEyMzQ1Njc4OTAxMi00NTY3",
        "hunter2pass",
    ]
    record = logging.makeLogRecord(
        {
            "msg": "calling with %s %s, refresh %s %s, db postgresql+asyncpg://bot:%s@db:5432/x",
            "args": tuple(secrets),
            "levelname": "INFO",
        }
    )
    line = JsonFormatter().format(record)
    assert [s for s in secrets if s in line] == []
    assert "postgresql+asyncpg://bot:[redacted]@db:5432/x" in json.loads(line)["msg"]


async def test_fail_closed_replayed_command_runs_once(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    model = ScriptedModel(["A refund for order 4411 is being processed."])
    bot = await start_bot(
        support_tree(model),
        summarizer=SummaryService(ScriptedModel([json.dumps(RECORD)])),
        support_lead_channel="CLEAD",
        support_leads="ULEAD",
    )
    slack.add_message("C1", ts=ROOT, text="order 4411 was charged twice", user="U1")
    await bot.send_event(channel_message("order 4411 was charged twice", ts=ROOT, mention=True))
    await bot.idle()
    body = urlencode(
        {
            "team_id": TEAM,
            "channel_id": "C1",
            "user_id": "U1",
            "command": "/summary",
            "text": LINK,
            "trigger_id": "13345224609.738474920.8088930838d88f008e0",
            "response_url": f"{slack.response_url_base}replayed",
            "api_app_id": "A1",
        }
    )
    first = await bot.post(body, "application/x-www-form-urlencoded")
    replay = await bot.post(body, "application/x-www-form-urlencoded")
    await bot.idle()
    assert (first.status, replay.status) == (200, 200)
    assert len(slack.calls_to("response_url")) == 1


async def test_fail_closed_deeply_nested_signed_body_is_a_400(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])))
    nested = '{"type": "event_callback", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = await bot.post(nested, "application/json")
    assert response.status == 400


async def _rows(db: Any, table: sa.Table) -> int:
    async with db.engine.connect() as conn:
        return int((await conn.execute(sa.select(sa.func.count()).select_from(table))).scalar())


async def test_fail_closed_unaddressed_channel_messages_write_nothing(
    slack: FakeSlackApi, start_bot: StartBot
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])))
    for n in range(5):
        await bot.send_event(channel_message(f"lunch at {n}?", ts=f"1700000700.00010{n}"))
    await bot.idle()
    db = bot.services.db
    assert (await _rows(db, deliveries), await _rows(db, inflight)) == (0, 0)
    assert slack.calls_to("chat.postMessage") == []


async def test_fail_closed_a_request_replayed_to_another_process_runs_once(
    slack: FakeSlackApi, db_url: str
) -> None:
    """Two bot processes on one database: a signed command, and a shortcut, replayed to
    the other process are acknowledged and dropped there too."""
    dbs = [await Database.open(db_url) for _ in range(2)]
    bots = [
        await BotHarness.start(slack, agent=support_tree(ScriptedModel([])), db=db) for db in dbs
    ]
    try:
        first = bots[0]
        command = first.command_body("/summary", LINK)
        shortcut = first.message_shortcut("handoff_thread", channel="C1", ts=ROOT, thread_ts=ROOT)
        payload = urlencode({"payload": json.dumps(shortcut)})
        for bot in bots:
            assert (await bot.post(command, "application/x-www-form-urlencoded")).status == 200
            assert (await bot.post(payload, "application/x-www-form-urlencoded")).status == 200
        for bot in bots:
            await bot.idle()
        # The command's answer ("no such thread") and the shortcut's modal, once each.
        assert len(slack.calls_to("response_url")) == 1
        assert len(slack.calls_to("views.open")) == 1
        async with dbs[0].engine.connect() as conn:
            keys = (await conn.execute(sa.select(deliveries.c.key))).scalars().all()
        assert sorted(k for k in keys if k.startswith("request:")) == sorted(
            [f"request:{shortcut['trigger_id']}", f"request:{parse_qs(command)['trigger_id'][0]}"]
        )
    finally:
        for bot in bots:
            await bot.stop()
        for db in dbs:
            await db.close()
