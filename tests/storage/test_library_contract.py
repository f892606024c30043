"""The private names of libraries the bot relies on, each checked by name.

`storage/sqlite_inline.py` keeps aiosqlite's interface but runs its calls on the event
loop's thread, through three of aiosqlite's private names (see that module's docstring).
`pyproject.toml` pins aiosqlite below its next minor release; when the pin is raised,
these tests say which name changed, instead of the bot breaking at start or, worse,
hopping threads again without a word.
"""

from __future__ import annotations

import inspect
import sqlite3
import threading
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from storage.sqlite_inline import InlineConnection

RELIED_ON_BY = "storage/sqlite_inline.py relies on it (see its docstring)"


def _require(owner: Any, name: str) -> Any:
    """`owner.name`, or a failure that names it and the aiosqlite release."""
    if not hasattr(owner, name):
        label = getattr(owner, "__qualname__", type(owner).__qualname__)
        pytest.fail(f"aiosqlite {aiosqlite.__version__}: {label}.{name} is gone; {RELIED_ON_BY}")
    return getattr(owner, name)


def _contract(holds: bool, name: str, what: str) -> None:
    if not holds:
        pytest.fail(f"aiosqlite {aiosqlite.__version__}: {name} {what}; {RELIED_ON_BY}")


def _inline(path: Path) -> InlineConnection:
    """As `storage.sqlite_inline.inline_creator` makes them, not yet awaited."""
    return InlineConnection(lambda: sqlite3.connect(path, check_same_thread=False))


async def _opened(path: Path) -> InlineConnection:
    connection = _inline(path)
    await connection
    return connection


def test_aiosqlite_connection__execute_is_a_coroutine_taking_the_call() -> None:
    execute = _require(aiosqlite.Connection, "_execute")
    _contract(
        inspect.iscoroutinefunction(execute), "Connection._execute", "is no coroutine function"
    )
    parameters = list(inspect.signature(execute).parameters.values())
    kinds = [p.kind for p in parameters]
    _contract(
        kinds
        == [
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ],
        "Connection._execute",
        f"no longer takes (self, fn, *args, **kwargs): {inspect.signature(execute)}",
    )


async def test_aiosqlite_connection__execute_carries_every_call(tmp_path: Path) -> None:
    # Each public call of a connection and its cursor, run on the loop's thread: one that
    # bypassed `_execute` would run on aiosqlite's worker thread again.
    connection = await _opened(tmp_path / "contract.db")
    threads: list[int] = []
    try:
        connection.sqlite.create_function(
            "whose_thread", 0, lambda: threads.append(threading.get_ident()) or 1
        )
        await connection.execute("CREATE TABLE t (x)")
        await connection.execute("INSERT INTO t VALUES (whose_thread())")
        await connection.commit()
        async with connection.cursor() as cursor:
            await cursor.execute("SELECT whose_thread() FROM t")
            assert await cursor.fetchall() == [(1,)]
        rows = await connection.execute_fetchall("SELECT x, whose_thread() FROM t")
        assert list(rows) == [(1, 1)]
        await connection.rollback()
    finally:
        await connection.close()
    _contract(
        threads == [threading.get_ident()] * 3,
        "Connection._execute",
        f"no longer carries every call (ran on threads {threads})",
    )


async def test_aiosqlite_connection__running_and__connection_say_whether_it_is_open(
    tmp_path: Path,
) -> None:
    connection = _inline(tmp_path / "contract.db")
    _contract(
        _require(connection, "_running") is True, "Connection._running", "is not True when made"
    )
    _contract(
        _require(connection, "_connection") is None,
        "Connection._connection",
        "is not None before the connection is awaited",
    )
    await connection
    _contract(
        connection._connection is connection.sqlite,
        "Connection._connection",
        "is not the sqlite3 connection the connector opened",
    )
    cursor = await connection.cursor()
    await connection.close()
    _contract(connection._running is False, "Connection._running", "is not False once closed")
    _contract(connection._connection is None, "Connection._connection", "is kept once closed")
    # A cursor that outlived its connection is refused by the closed check.
    with pytest.raises(ValueError, match="Connection closed"):
        await cursor.execute("SELECT 1")


def test_aiosqlite_connection__thread_is_the_worker_thread(tmp_path: Path) -> None:
    connection = _inline(tmp_path / "contract.db")
    worker = _require(connection, "_thread")
    _contract(isinstance(worker, threading.Thread), "Connection._thread", "is no Thread")
    _contract(worker.daemon, "Connection._thread", "is not a daemon (set in __init__)")
    _contract(not worker.is_alive(), "Connection._thread", "started before it was awaited")
