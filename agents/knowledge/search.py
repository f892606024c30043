"""`KnowledgeSearch`: what an agent needs from a knowledge index (storage implements it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class KnowledgeHit:
    """One section found for a query, with what a reply needs to cite it; `position` is
    the section's place in its document (0: the opening)."""

    id: str
    doc_id: str
    collection: str
    title: str
    heading: str
    url: str | None
    text: str
    score: float
    position: int = 0

    def source(self) -> dict[str, Any]:
        """The citation kept in a reply's `custom_metadata["knowledge_sources"]`."""
        return {
            "id": self.id,
            "title": self.title,
            "heading": self.heading,
            "url": self.url,
            "collection": self.collection,
        }


class KnowledgeSearch(Protocol):
    """Searches indexed knowledge sections, best first."""

    async def search(
        self, query: str, *, collections: Sequence[str] | None = None, limit: int = 5
    ) -> list[KnowledgeHit]:
        """The best `limit` sections for `query`, only from `collections` when given."""
        ...
