"""`KnowledgeStore`: the knowledge index in the bot's own database.

`sync` brings the index in line with a folder's documents in one transaction: a document
whose content hash is unchanged is not touched, a changed one has its sections replaced,
a new one is added, and one whose file is gone leaves the index. The stored hash also
holds the word keys' version (`agents.words.KEYS_VERSION`): after a change of the keys,
the next sync indexes every document again, as an edit of each would. `search` implements
`agents.knowledge.KnowledgeSearch`: the backend's best candidates, re-ranked by
`agents.knowledge.ranking` the same way on SQLite and PostgreSQL.
"""

from __future__ import annotations

import hashlib
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agents import words
from agents.knowledge.documents import Document
from agents.knowledge.ranking import CANDIDATES, CorpusStats, distinctive_terms, rerank
from agents.knowledge.search import KnowledgeHit
from agents.words import query_terms
from storage.engine import SqlGate
from storage.knowledge import fulltext
from storage.schema import knowledge_documents, knowledge_sections

# How long search reuses the index's section count and average field lengths: they move
# slowly, and reading them scans every section. A sync here refreshes them at once.
LENGTHS_TTL_SECONDS = 60.0
# Serialises concurrent syncs of several processes sharing one PostgreSQL database.
_SYNC_LOCK = zlib.crc32(b"support-bot knowledge sync")


@dataclass(frozen=True)
class SyncReport:
    """What a sync did, by document id."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line: "2 added, 1 updated, 0 removed, 5 unchanged"."""
        return (
            f"{len(self.added)} added, {len(self.updated)} updated, "
            f"{len(self.removed)} removed, {len(self.unchanged)} unchanged"
        )


class KnowledgeStore:
    """Indexes knowledge documents and searches their sections."""

    def __init__(self, gate: SqlGate) -> None:
        self._gate = gate
        self._lengths: tuple[int, float, float, float] | None = None
        self._lengths_at = 0.0

    async def sync(self, documents: Sequence[Document], *, now: float | None = None) -> SyncReport:
        """Make the index hold exactly `documents` (see the module docstring)."""
        stamp = time.time() if now is None else now

        async def tx(conn: AsyncConnection) -> SyncReport:
            if conn.dialect.name == "postgresql":
                await conn.execute(
                    sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SYNC_LOCK}
                )
            rows = await conn.execute(
                sa.select(knowledge_documents.c.doc_id, knowledge_documents.c.content_hash)
            )
            stored = {doc_id: content_hash for doc_id, content_hash in rows.tuples()}
            report = SyncReport()
            wanted = {d.doc_id for d in documents}
            gone = sorted(set(stored) - wanted)
            changed = [
                d for d in documents if d.doc_id in stored and stored[d.doc_id] != _indexed_hash(d)
            ]
            await _delete(conn, [*gone, *(d.doc_id for d in changed)])
            fresh: list[Document] = []
            for document in documents:
                if document.doc_id not in stored:
                    report.added.append(document.doc_id)
                elif stored[document.doc_id] == _indexed_hash(document):
                    report.unchanged.append(document.doc_id)
                    continue
                else:
                    report.updated.append(document.doc_id)
                fresh.append(document)
            await _insert(conn, fresh, stamp)
            report.removed.extend(gone)
            return report

        report = await self._gate.write(tx)
        self._lengths = None
        return report

    async def search(
        self, query: str, *, collections: Sequence[str] | None = None, limit: int = 5
    ) -> list[KnowledgeHit]:
        """The best `limit` sections for `query`, only from `collections` when given."""
        terms = query_terms(query)
        if not terms or limit < 1:
            return []

        fresh = time.monotonic() - self._lengths_at < LENGTHS_TTL_SECONDS
        cached = self._lengths if fresh else None

        async def tx(conn: AsyncConnection) -> tuple[list[sa.Row], CorpusStats]:
            lengths = cached or await fulltext.field_lengths(conn)
            stats = await fulltext.corpus_stats(conn, terms, lengths)
            matching = distinctive_terms(terms, stats)
            rows = await fulltext.candidates(conn, matching, collections, max(CANDIDATES, limit))
            return rows, stats

        rows, stats = await self._gate.read(tx)
        if cached is None:
            lengths = (stats.sections, stats.avg_title, stats.avg_heading, stats.avg_body)
            self._lengths, self._lengths_at = lengths, time.monotonic()
        found = [
            KnowledgeHit(
                id=row.section_id,
                doc_id=row.doc_id,
                collection=row.collection,
                title=row.title,
                heading=row.heading,
                url=row.url,
                text=row.body,
                score=float(row.score),
                position=int(row.position),
            )
            for row in rows
        ]
        return rerank(found, query, terms, stats, limit=limit)

    async def collections(self) -> dict[str, int]:
        """Indexed collections and how many documents each holds."""

        async def tx(conn: AsyncConnection) -> dict[str, int]:
            count = sa.func.count()
            rows = await conn.execute(
                sa.select(knowledge_documents.c.collection, count)
                .group_by(knowledge_documents.c.collection)
                .order_by(knowledge_documents.c.collection)
            )
            return {collection: int(n) for collection, n in rows.tuples()}

        return await self._gate.read(tx)


def _indexed_hash(document: Document) -> str:
    """The hash stored for `document`: of its content and of the keys its words are
    indexed by, so that a change of either indexes it again."""
    return hashlib.sha256(f"{words.KEYS_VERSION}:{document.content_hash}".encode()).hexdigest()


async def _delete(conn: AsyncConnection, doc_ids: Sequence[str]) -> None:
    if not doc_ids:
        return
    pks = (
        (
            await conn.execute(
                sa.select(knowledge_sections.c.pk).where(knowledge_sections.c.doc_id.in_(doc_ids))
            )
        )
        .scalars()
        .all()
    )
    await fulltext.remove_rows(conn, list(pks))
    await conn.execute(knowledge_sections.delete().where(knowledge_sections.c.doc_id.in_(doc_ids)))
    await conn.execute(
        knowledge_documents.delete().where(knowledge_documents.c.doc_id.in_(doc_ids))
    )


async def _insert(conn: AsyncConnection, documents: Sequence[Document], now: float) -> None:
    """Index `documents` in four statements for all of them (a statement per document
    and table was a round trip each, 3,000 for the benchmark's 1,000 documents)."""
    if not documents:
        return
    await conn.execute(
        knowledge_documents.insert(),
        [
            {
                "doc_id": d.doc_id,
                "collection": d.collection,
                "title": d.title,
                "url": d.url,
                "path": d.path,
                "content_hash": _indexed_hash(d),
                "indexed_at": now,
            }
            for d in documents
        ],
    )
    sections = [(d, s) for d in documents for s in d.sections]
    await conn.execute(
        knowledge_sections.insert(),
        [
            {
                "section_id": s.id,
                "doc_id": d.doc_id,
                "collection": d.collection,
                "position": s.position,
                "heading": s.heading,
                "body": s.text,
            }
            for d, s in sections
        ],
    )
    # One read for the new sections' keys: SQLite returns rows of a many-row INSERT only
    # one statement per row.
    ids = sa.select(knowledge_sections.c.section_id, knowledge_sections.c.pk).where(
        knowledge_sections.c.doc_id.in_([d.doc_id for d in documents])
    )
    pks = {section_id: pk for section_id, pk in (await conn.execute(ids)).tuples()}
    await fulltext.add_rows(
        conn,
        [
            {"pk": pks[s.id], "title": d.title, "heading": s.heading, "body": s.text}
            for d, s in sections
        ],
    )
