"""Alembic environment: runs on the connection `storage.migrate` hands over.

The storage layer only speaks async drivers, so migrations run inside
`AsyncConnection.run_sync` and never open a connection of their own.
"""

from __future__ import annotations

from alembic import context

from storage.schema import include_name, metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through storage.migrate, which supplies a connection")

context.configure(
    connection=connection,
    target_metadata=metadata,
    include_name=include_name,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
