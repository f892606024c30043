"""Errors the storage layer raises, each with a one-line message fit for an operator."""

from __future__ import annotations

from agents.errors import SessionStoreError


class StorageError(SessionStoreError):
    """Base class for storage failures that callers may show to a person."""


class DatabaseUnavailableError(StorageError):
    """The database could not be reached or opened at start."""


class DatabaseOutdatedError(StorageError):
    """The database schema is older than the code and was not migrated."""


class DatabaseSchemaError(StorageError):
    """The database schema is at a revision this code does not know (newer code wrote it)."""


class StorageWriteError(StorageError):
    """A write failed for a reason retrying will not fix (disk full, read-only file)."""


class StorageReadError(StorageError):
    """A read failed (the connection dropped, the file went away)."""


class SessionExistsError(ValueError):
    """A session with this id already exists (another writer created it first)."""
