"""Suite-wide guards: no test reaches a hosted model or any non-loopback address."""

from __future__ import annotations

import ipaddress
import os
import socket

import pytest

pytest_plugins = ["tests.fixtures.postgres"]

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
