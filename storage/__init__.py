"""Persistence for the bot on SQLAlchemy 2 async: SQLite (aiosqlite) or PostgreSQL (asyncpg)."""

from storage.database import Database
from storage.errors import (
    DatabaseOutdatedError,
    DatabaseSchemaError,
    DatabaseUnavailableError,
    StorageError,
    StorageReadError,
    StorageWriteError,
)

__all__ = [
    "Database",
    "DatabaseOutdatedError",
    "DatabaseSchemaError",
    "DatabaseUnavailableError",
    "StorageError",
    "StorageReadError",
    "StorageWriteError",
]
