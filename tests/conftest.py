"""Suite-wide guards: no test reaches a hosted model or any non-loopback address; every
`ScriptedModel` a test makes has its script played to the end (unless it says why not,
`partial=`); and every async test runs on the event loop the bot ships with
(`EVENT_LOOP`'s default, the standard library's own), so the suite tests what
`support-bot serve` runs (`EVENT_LOOP=uvloop pytest` runs it on uvloop)."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any

import pytest

from agents.models.scripted import record_created

pytest_plugins = ["tests.fixtures.postgres", "tests.fixtures.backends"]

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_TELEMETRY", "False")

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _allowed(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # Unix sockets
        return True
    if not isinstance(address, tuple) or not address:
        return False
    host = address[0]
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _allowed(address):
        raise ConnectionRefusedError(f"tests may not reach {address!r}: only loopback")
    _real_connect(self, address)  # type: ignore[arg-type]


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if not _allowed(address):
        raise ConnectionRefusedError(f"tests may not reach {address!r}: only loopback")
    return _real_connect_ex(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True, scope="session")
def _block_network() -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _fresh_metrics() -> None:
    from agents.metrics import REGISTRY

    REGISTRY.reset()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the item, so teardown can tell whether the test passed."""
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.fixture(autouse=True)
def _scripts_played_to_the_end(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test that passed (its fixtures torn down first, so its bots have stopped),
    every `ScriptedModel` it made has played its whole script, unless it was made with
    `partial=` and the reason why it may not."""
    with record_created() as made:
        yield
    reports = request.node.stash.get(_REPORTS, {})
    if "call" not in reports or not reports["call"].passed:
        return
    problems = []
    for model in made:
        if model.partial is None:
            try:
                model.assert_complete()
            except AssertionError as exc:
                problems.append(str(exc))
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def _guarded_uvloop() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop with the loopback guard: uvloop connects to a host name or address
    in C (libuv), past the `socket.connect` patched above, so its `create_connection`
    checks the host itself (aiohttp connects through `sock_connect`, which the patch
    covers)."""
    try:
        import uvloop
    except ImportError:
        return None

    class GuardedLoop(uvloop.Loop):  # type: ignore[misc]
        async def create_connection(  # type: ignore[override]
            self, protocol_factory: Any, host: Any = None, port: Any = None, **kwargs: Any
        ) -> Any:
            if host is not None and not _allowed((host, port)):
                raise ConnectionRefusedError(f"tests may not reach {host!r}: only loopback")
            return await super().create_connection(protocol_factory, host, port, **kwargs)

    return GuardedLoop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """The shipped loop for every async test (pytest-asyncio's hook)."""
    from bot.config import Settings

    shipped = os.environ.get("EVENT_LOOP") or Settings.model_fields["event_loop"].default
    factory = _guarded_uvloop() if shipped == "uvloop" else None
    if factory is None:
        return {"asyncio": asyncio.new_event_loop}
    return {shipped: factory}
