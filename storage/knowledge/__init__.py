"""The knowledge index in the bot's own database (SQLite FTS5 or PostgreSQL full-text)."""

from storage.knowledge.store import KnowledgeStore, SyncReport

__all__ = ["KnowledgeStore", "SyncReport"]
