"""End to end over Socket Mode: a DM round trip and a new panel thread through a local
WebSocket server."""

from __future__ import annotations

import time
from pathlib import Path

import aiohttp
from aiohttp import web

from agents.models.scripted import ScriptedModel
from agents.runner import Runner
from bot.config import Settings
from bot.slack.app import build_bolt_app, build_web_app, create_services, drain
from bot.slack.message_ts import SlackTsPlugin
from bot.slack.server import socket_handler
from tests.e2e.harness import dm, open_database
from tests.e2e.replies import context_text, shown, wait_answers
from tests.e2e.test_panel import thread_started
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_socket import FakeSocketModeServer


async def test_socket_mode_dm_round_trip_and_health(tmp_path: Path) -> None:
    async with FakeSocketModeServer() as ws, FakeSlackApi(socket_url="") as slack:
        slack.socket_url = ws.url
        settings = Settings(
            slack_bot_token="xoxb-test",
            slack_app_token="xapp-test",
            slack_api_url=slack.url,
            _env_file=None,
        )
        assert settings.mode() == "socket"
        db = await open_database(tmp_path)
        runner = Runner(
            agent=support_tree(ScriptedModel(["Hi over the socket"])),
            app_name=settings.app_name,
            session_service=db.sessions,
            plugins=[SlackTsPlugin()],
        )
        services, client = await create_services(settings, db=db, runner=runner, summarizer=None)
        bolt = build_bolt_app(services)
        handler = socket_handler(bolt, settings, services.client)
        web_app = build_web_app(
            services, bolt, http_events=False, extra_health=handler.client.is_connected
        )
        site_runner = web.AppRunner(web_app)
        await site_runner.setup()
        site = web.TCPSite(site_runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            await handler.connect_async()
            await ws.wait_connected()
            body = {
                "type": "event_callback",
                "team_id": "T1",
                "api_app_id": "A1",
                "event_id": "EvS1",
                "event_time": int(time.time()),
                "event": dm("hello socket", ts="1700000500.000100"),
            }
            envelope = await ws.send_event(body)
            await ws.wait_acked(envelope)
            [reply] = await wait_answers(slack)
            assert "Hi over the socket" in shown(reply)
            assert "support_supervisor" in context_text(reply)
            assert [c["_token"] for c in slack.calls_to("apps.connections.open")] == ["xapp-test"]
            # The assistant panel (the manifest's default deployment is Socket Mode).
            panel = {**body, "event_id": "EvS2", "event": thread_started("1700000600.000100")}
            await ws.wait_acked(await ws.send_event(panel))
            await slack.wait_for("assistant.threads.setSuggestedPrompts")
            [title] = slack.calls_to("assistant.threads.setTitle")
            assert title["thread_ts"] == "1700000600.000100"
            async with aiohttp.ClientSession() as http:
                async with http.get(f"http://127.0.0.1:{port}/healthz") as resp:
                    assert resp.status == 200
                    assert (await resp.json())["socket"] is True
                async with http.get(f"http://127.0.0.1:{port}/metrics") as resp:
                    assert "support_bot_invocations_total 1" in await resp.text()
        finally:
            await drain(services)
            await handler.close_async()
            await site_runner.cleanup()
            await client.close()
            await db.close()
