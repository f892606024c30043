"""Knowledge the agents answer from: documents split into sections, and how to search them."""

from agents.knowledge.documents import (
    DEFAULT_COLLECTION,
    Document,
    KnowledgeDocumentError,
    Section,
    load_folder,
)
from agents.knowledge.search import KnowledgeHit, KnowledgeSearch

__all__ = [
    "DEFAULT_COLLECTION",
    "Document",
    "KnowledgeDocumentError",
    "KnowledgeHit",
    "KnowledgeSearch",
    "Section",
    "load_folder",
]
