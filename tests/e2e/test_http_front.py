"""The HTTP front as `support-bot serve` runs it (`bot.slack.server.start_web`) under
hostile clients: junk does not hold up Slack's signed events, connections that never
deliver a request are closed, one address's flood past its share closes only its own
connections while Slack's events from another address are acked, the connection cap
drops the longest-waiting one, and health and metrics answer only this host."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from agents.metrics import REGISTRY
from agents.models.scripted import ScriptedModel
from bot.slack.app import build_bolt_app, build_web_app
from bot.slack.server import WebFront, start_web
from tests.e2e.conftest import StartBot
from tests.e2e.harness import TEAM, BotHarness, dm, sign
from tests.e2e.replies import wait_answers
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

Serve = Callable[..., Awaitable[tuple[BotHarness, WebFront]]]
JUNK_CLIENTS = 4
JUNK_CAP = 3000  # per client: the junk stops here if the signed events never get through


def closed_total(reason: str) -> float:
    return REGISTRY.get("support_bot_http_connections_closed_total", reason=reason)


@pytest.fixture
async def serve(start_bot: StartBot) -> AsyncIterator[Serve]:
    """`await serve(model, host=..., **settings)`: the bot behind the shipped front; the
    harness's requests (`bot.send_event`) go through it."""
    fronts: list[WebFront] = []

    async def start(model: ScriptedModel, host: str = "127.0.0.1", **settings: Any) -> Any:
        bot = await start_bot(support_tree(model), **settings)
        app = build_web_app(bot.services, build_bolt_app(bot.services))
        front = await start_web(app, bot.services.settings, host=host, port=0)
        fronts.append(front)
        bot.url = f"http://127.0.0.1:{front.port}"
        return bot, front

    yield start
    for front in fronts:
        await front.stop()


async def _raw(
    port: int, data: bytes, source: str = "127.0.0.1"
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    writer.write(data)
    await writer.drain()
    return reader, writer


async def _closed_by_server(reader: asyncio.StreamReader) -> bool:
    """Whether the server closes the connection (EOF or reset) without answering."""
    try:
        return await reader.read() == b""
    except ConnectionResetError:
        return True


async def test_front_acks_signed_events_while_junk_keeps_arriving(
    slack: FakeSlackApi, serve: Serve
) -> None:
    model = ScriptedModel([f"answer {n}" for n in range(3)])
    bot, _ = await serve(model)
    done = asyncio.Event()
    flowing = asyncio.Event()
    junk_statuses: list[int] = []
    junk_after_ack = 0

    async def junk() -> None:
        nonlocal junk_after_ack
        async with aiohttp.ClientSession() as http:
            for _ in range(JUNK_CAP):
                async with http.post(
                    f"{bot.url}/slack/events", data=b'{"type":"event_callback"}' * 50
                ) as r:
                    junk_statuses.append(r.status)
                if len(junk_statuses) >= 50:
                    flowing.set()
                if done.is_set():
                    junk_after_ack += 1
                    if junk_after_ack >= JUNK_CLIENTS * 5:
                        return

    clients = [asyncio.create_task(junk()) for _ in range(JUNK_CLIENTS)]
    await flowing.wait()  # the junk is flowing before Slack's events come
    acks = []
    for n in range(3):
        acks.append((await bot.send_event(dm(f"question {n}", ts=f"1700000200.00010{n}"))).status)
    junk_at_acks = len(junk_statuses)
    done.set()
    await asyncio.gather(*clients)
    assert acks == [200, 200, 200]
    # The signed events were acked while junk was still arriving, long before it ran out.
    assert junk_at_acks < JUNK_CLIENTS * JUNK_CAP
    assert junk_after_ack >= JUNK_CLIENTS * 5
    assert set(junk_statuses) == {401}
    answers = await wait_answers(slack, 3)
    assert sorted(a["text"] for a in answers) == [
        f"support_supervisor: answer {n}" for n in range(3)
    ]


async def test_front_closes_connections_that_never_deliver_a_request(
    slack: FakeSlackApi, serve: Serve
) -> None:
    model = ScriptedModel(["still here"])
    bot, front = await serve(model, http_request_timeout_seconds=0.5)
    before = closed_total("timeout")
    idle = await _raw(front.port, b"")
    half_headers = await _raw(front.port, b"POST /slack/events HTTP/1.1\r\nHost: bot\r\n")
    slow_body = await _raw(
        front.port,
        b'POST /slack/events HTTP/1.1\r\nHost: bot\r\nContent-Length: 400\r\n\r\n{"type":',
    )
    for reader, writer in (idle, half_headers, slow_body):
        assert await _closed_by_server(reader)
        writer.close()
    assert closed_total("timeout") - before == 3
    assert front.guard.open_connections <= 1  # at most the harness's own keep-alive
    assert (await bot.send_event(dm("are you there?", ts="1700000300.000100"))).status == 200
    [answer] = await wait_answers(slack, 1)
    assert answer["text"] == "support_supervisor: still here"


def _signed_dm(user: str) -> tuple[str, dict[str, str]]:
    """A signed DM event from `user` in a DM of their own: its body and headers."""
    body = json.dumps(
        {
            "type": "event_callback",
            "team_id": TEAM,
            "api_app_id": "A1",
            "event_id": f"Ev{user}",
            "event_time": int(time.time()),
            "event": dm("hello", ts="1700000500.000100", user=user, channel=f"D{user}"),
        }
    )
    return body, {"Content-Type": "application/json", **sign(body)}


async def _signed_dms(url: str, source: str, users: list[str]) -> list[int]:
    """A signed DM event from each of `users`, sent from `source`, each on a connection of
    its own."""
    statuses = []
    connector = aiohttp.TCPConnector(local_addr=(source, 0), force_close=True)
    async with aiohttp.ClientSession(connector=connector) as http:
        for user in users:
            body, headers = _signed_dm(user)
            async with http.post(f"{url}/slack/events", data=body, headers=headers) as r:
                statuses.append(r.status)
    return statuses


async def test_front_one_addresss_flood_churns_only_its_own_and_slack_from_another_is_acked(
    slack: FakeSlackApi, serve: Serve
) -> None:
    """Slack (127.0.0.1) has opened a connection whose request is still on its way when a
    client at 127.0.0.2 opens three times its share of half-sent requests, more than the
    whole cap. Each of the flood's past its share closes one of its own, never anyone
    else's: Slack's slow connection, the longest-waiting of all, still delivers its event,
    and Slack's next events, each on a fresh connection, are acked and answered."""
    model = ScriptedModel(["first", "second", "third"])
    share = 4
    bot, front = await serve(
        model,
        http_max_connections=share + 2,
        http_max_connections_per_peer=share,
        http_request_timeout_seconds=60,
    )
    refused, evicted = closed_total("peer_cap"), closed_total("evicted")
    slow_reader, slow_writer = await _raw(front.port, b"")
    half_sent = b"POST /slack/events HTTP/1.1\r\nHost: bot\r\n"
    flood = [await _raw(front.port, half_sent, "127.0.0.2") for _ in range(3 * share)]
    assert closed_total("evicted") - evicted == 2 * share
    assert front.guard.open_connections == share + 1

    body, headers = _signed_dm("U6")
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    slow_writer.write(
        f"POST /slack/events HTTP/1.1\r\nHost: bot\r\nContent-Length: {len(body)}\r\n"
        f"{head}\r\n{body}".encode()
    )
    assert (await slow_reader.readline()).split()[:2] == [b"HTTP/1.1", b"200"]
    assert await _signed_dms(bot.url, "127.0.0.1", ["U7", "U8"]) == [200, 200]
    # Slack's connections took no one's place: the flood's share kept the cap unreached.
    assert closed_total("evicted") - evicted == 2 * share
    assert closed_total("peer_cap") == refused
    answers = await wait_answers(slack, 3)
    assert sorted(a["text"] for a in answers) == [
        "support_supervisor: first",
        "support_supervisor: second",
        "support_supervisor: third",
    ]
    for _, writer in [*flood, (slow_reader, slow_writer)]:
        writer.close()


async def test_front_refuses_a_peer_at_its_share_with_nothing_of_its_own_to_close(
    slack: FakeSlackApi, serve: Serve
) -> None:
    """A peer whose share is one kept-alive connection that was answered (Slack's kind)
    does not lose it to its own newcomer: the newcomer is refused."""
    bot, front = await serve(
        ScriptedModel([]),
        http_max_connections=8,
        http_max_connections_per_peer=1,
        http_request_timeout_seconds=60,
    )
    refused, evicted = closed_total("peer_cap"), closed_total("evicted")
    connector = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
    async with aiohttp.ClientSession(connector=connector) as kept:
        body = json.dumps({"type": "url_verification", "challenge": "c1", "token": "legacy"})
        headers = {"Content-Type": "application/json", **sign(body)}
        async with kept.post(f"{bot.url}/slack/events", data=body, headers=headers) as r:
            assert r.status == 200
        newcomer, writer = await _raw(front.port, b"POST /slack/events HTTP/1.1\r\n", "127.0.0.2")
        assert await _closed_by_server(newcomer)
        writer.close()
        assert closed_total("peer_cap") - refused == 1
        async with kept.post(f"{bot.url}/slack/events", data=body, headers=headers) as r:
            assert r.status == 200
    assert closed_total("evicted") == evicted
    assert closed_total("peer_cap") - refused == 1


async def test_front_cap_drops_the_longest_waiting_half_sent_connection_not_slacks(
    slack: FakeSlackApi, serve: Serve
) -> None:
    model = ScriptedModel(["first", "second"])
    bot, front = await serve(
        model,
        http_max_connections=4,
        http_max_connections_per_peer=4,  # no per-peer cap: every connection is 127.0.0.1's
        http_request_timeout_seconds=60,
    )
    before = closed_total("evicted")
    # The oldest has sent its headers (its body is still to come); the others have not.
    headed = b"POST /slack/events HTTP/1.1\r\nHost: bot\r\nContent-Length: 99\r\n\r\n{"
    held = [await _raw(front.port, headed)]
    held += [await _raw(front.port, b"POST /slack/events HTTP/1.1\r\n") for _ in range(3)]
    assert front.guard.open_connections == 4
    assert (await bot.send_event(dm("one", ts="1700000400.000100"))).status == 200
    # Slack's connection took the place of the one that had waited longest while still
    # sending its headers; the one whose headers were in was spared.
    assert await _closed_by_server(held[1][0])
    assert closed_total("evicted") - before == 1
    more = [await _raw(front.port, b"GET /") for _ in range(10)]
    assert front.guard.open_connections <= 4
    assert (await bot.send_event(dm("two", ts="1700000400.000200"))).status == 200
    assert closed_total("evicted") - before >= 11
    for _, writer in held + more:
        writer.close()
    answers = await wait_answers(slack, 2)
    assert sorted(a["text"] for a in answers) == [
        "support_supervisor: first",
        "support_supervisor: second",
    ]


async def test_front_serves_health_and_metrics_only_to_allowed_peers(serve: Serve) -> None:
    """Slack must reach the events port, so anyone can: /healthz and /metrics answer only
    `OPS_ALLOW_FROM` (loopback by default). Here only 127.0.0.1 is allowed, and a client
    connecting from 127.0.0.2 stands for any other host."""
    _, front = await serve(ScriptedModel([]), host="0.0.0.0", ops_allow_from="127.0.0.1/32")
    statuses = {}
    for source in ("127.0.0.1", "127.0.0.2"):
        connector = aiohttp.TCPConnector(local_addr=(source, 0))
        async with aiohttp.ClientSession(connector=connector) as http:
            for path in ("/healthz", "/metrics"):
                async with http.get(f"http://127.0.0.1:{front.port}{path}") as r:
                    statuses[source, path] = r.status
                    if r.status == 200 and path == "/healthz":
                        assert json.loads(await r.read())["ok"] is True
            # The events port itself is open to every peer (Slack's requests come from afar).
            async with http.post(f"http://127.0.0.1:{front.port}/slack/events", data=b"{}") as r:
                statuses[source, "/slack/events"] = r.status
    assert statuses == {
        ("127.0.0.1", "/healthz"): 200,
        ("127.0.0.1", "/metrics"): 200,
        ("127.0.0.1", "/slack/events"): 401,
        ("127.0.0.2", "/healthz"): 404,
        ("127.0.0.2", "/metrics"): 404,
        ("127.0.0.2", "/slack/events"): 401,
    }
