"""The turn's hottest statements, run without SQLAlchemy's per-execute machinery.

A prebuilt Core statement still costs SQLAlchemy about a hundred microseconds per
execute on top of the driver (execution context, events, result proxy, a greenlet
switch), several times what SQLite needs for a keyed row. On SQLite, whose connections
run on the event loop's thread (`storage.sqlite_inline`), a `Prepared` statement is
compiled once per set of parameter names and executed straight on the `sqlite3`
connection inside the caller's transaction; on PostgreSQL it goes through
`AsyncConnection.execute` as before. Call sites are the same for both backends.

Only statements whose parameters and results are plain values (text, numbers, JSON
written through the column's own bind processor) are run this way; driver errors are
wrapped as SQLAlchemy wraps them, so `SqlGate` retries and reports them the same.

Everything read from SQLAlchemy here is public: the compiled form's `string`, `binds`
and `positiontup` (`SQLCompiler`'s documented attributes), each bind's
`effective_value`, and the processors its type gives the dialect
(`TypeEngine.dialect_impl(...).bind_processor` / `result_processor`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.expression import Executable

from storage.sqlite_inline import sqlite3_connection

# The SQL, its parameter names in order, bind processors, and the values of the
# statement's own literals (`last_seq + 1`), which no caller passes.
_Compiled = tuple[str, tuple[str, ...], dict[str, Callable[[Any], Any]], dict[str, Any]]


class Prepared:
    """One prebuilt statement; `rows` and `rowcount` run it in the caller's transaction."""

    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        columns = list(getattr(statement, "exported_columns", ()))
        self.keys: tuple[str, ...] = tuple(str(c.key) for c in columns)
        self._types = [c.type for c in columns]
        self._sqlite: dict[frozenset[str], _Compiled] = {}
        self._decoders: list[tuple[int, Callable[[Any], Any]]] | None = None

    async def rows(self, conn: AsyncConnection, params: Mapping[str, Any]) -> Sequence[Any]:
        """The rows the statement returns, as tuples in the order of `keys`."""
        if conn.dialect.name != "sqlite":
            return (await conn.execute(self.statement, dict(params))).all()
        rows = self._run_sqlite(conn, params).fetchall()
        decoders = self._result_decoders(conn.dialect)
        if not decoders or not rows:
            return rows
        decoded = []
        for row in rows:
            values = list(row)
            for index, decode in decoders:
                values[index] = decode(values[index])
            decoded.append(values)
        return decoded

    async def mappings(
        self, conn: AsyncConnection, params: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        """The rows as dicts keyed by column."""
        keys = self.keys
        return [dict(zip(keys, row, strict=True)) for row in await self.rows(conn, params)]

    async def rowcount(self, conn: AsyncConnection, params: Mapping[str, Any]) -> int:
        """How many rows the statement changed."""
        if conn.dialect.name != "sqlite":
            return int((await conn.execute(self.statement, dict(params))).rowcount)
        return int(self._run_sqlite(conn, params).rowcount)

    def _run_sqlite(self, conn: AsyncConnection, params: Mapping[str, Any]) -> sqlite3.Cursor:
        sql, names, processors, literals = self._compiled(conn.dialect, params)
        values = {**literals, **params} if literals else params
        args = [
            processors[name](values[name]) if name in processors else values[name] for name in names
        ]
        try:
            return sqlite3_connection(conn).execute(sql, args)
        except sqlite3.Error as exc:
            raise DBAPIError.instance(sql, args, exc, sqlite3.Error) from exc

    def _result_decoders(self, dialect: Dialect) -> list[tuple[int, Callable[[Any], Any]]]:
        # The columns' own result processors (JSON text to objects, 0/1 to booleans).
        if self._decoders is None:
            found = (
                (index, kind.dialect_impl(dialect).result_processor(dialect, None))
                for index, kind in enumerate(self._types)
            )
            self._decoders = [(index, fn) for index, fn in found if fn is not None]
        return self._decoders

    def _compiled(self, dialect: Dialect, params: Mapping[str, Any]) -> _Compiled:
        # An INSERT or UPDATE sets the columns named by its parameters, so the SQL
        # depends on the set of names.
        names = frozenset(params)
        compiled = self._sqlite.get(names)
        if compiled is None:
            form = self.statement.compile(dialect=dialect, column_keys=sorted(names))  # type: ignore[attr-defined]
            order = tuple(form.positiontup or ())
            processors = {
                name: fn
                for name in order
                if (fn := form.binds[name].type.dialect_impl(dialect).bind_processor(dialect))
            }
            literals = {
                name: form.binds[name].effective_value for name in order if name not in names
            }
            compiled = (form.string, order, processors, literals)
            self._sqlite[names] = compiled
        return compiled
