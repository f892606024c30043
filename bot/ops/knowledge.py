"""The knowledge base commands: `knowledge sync`, `knowledge search` and
`knowledge eval`, and the sync the bot runs at start.

Each command takes settings and an output stream and returns an exit code; `bot.cli`
only parses arguments.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from agents.knowledge.documents import KnowledgeDocumentError, load_folder
from bot.config import Settings

if TYPE_CHECKING:
    from storage.database import Database
    from storage.knowledge import SyncReport

log = logging.getLogger(__name__)
SNIPPET_CHARS = 160


async def sync_folder(db: Database, folder: Path) -> SyncReport:
    """Index `folder` into `db`; raises `KnowledgeDocumentError` naming a bad file."""
    return await db.knowledge.sync(load_folder(folder))


async def sync_at_start(settings: Settings, db: Database) -> None:
    """Sync `KNOWLEDGE_DIR` as the bot starts. A bad file is logged with its name and
    the index is left as it was: the bot still answers from what was indexed before."""
    try:
        report = await sync_folder(db, settings.knowledge_dir)
    except KnowledgeDocumentError as exc:
        log.error("knowledge base not synced: %s", exc)
        return
    log.info("knowledge base synced from %s: %s", settings.knowledge_dir, report.summary())


async def sync(settings: Settings, out: TextIO, folder: Path | None = None) -> int:
    """`knowledge sync`: index `folder` (default `KNOWLEDGE_DIR`), print what changed."""
    from storage.database import Database

    folder = folder or settings.knowledge_dir
    db = await Database.open(settings.database_url)
    try:
        report = await sync_folder(db, folder)
    except KnowledgeDocumentError as exc:
        out.write(f"knowledge sync failed: {exc}\n")
        return 1
    finally:
        await db.close()
    out.write(f"{folder}: {report.summary()}\n")
    for label, ids in (
        ("added", report.added),
        ("updated", report.updated),
        ("removed", report.removed),
    ):
        for doc_id in ids:
            out.write(f"  {label}: {doc_id}\n")
    return 0


async def search(
    settings: Settings,
    out: TextIO,
    query: str,
    *,
    collections: list[str] | None = None,
    limit: int = 5,
) -> int:
    """`knowledge search`: what an agent would find for `query`."""
    from storage.database import Database

    db = await Database.open(settings.database_url)
    try:
        hits = await db.knowledge.search(query, collections=collections or None, limit=limit)
    finally:
        await db.close()
    if not hits:
        out.write("no section matches\n")
        return 0
    for rank, hit in enumerate(hits, start=1):
        snippet = " ".join(hit.text.split())
        if len(snippet) > SNIPPET_CHARS:
            snippet = snippet[: SNIPPET_CHARS - 1] + "…"
        out.write(f"{rank}. {hit.id}  (score {hit.score:.3f})\n")
        out.write(f"   {hit.title} › {hit.heading or '(introduction)'}\n")
        if hit.url:
            out.write(f"   {hit.url}\n")
        out.write(f"   {snippet}\n")
    return 0


async def evaluate(
    out: TextIO,
    docs: Path,
    data: Path,
    *,
    half: str | None = None,
    database_url: str | None = None,
) -> int:
    """`knowledge eval`: index `docs`, then print retrieval hit@1/@5 of the questions in
    `data` per half of the seeded split and overall (`bot.evals.retrieval`); with `half`
    ("look" or "measure"), of that half only.

    The folder is indexed into a database of its own, never the bot's: a sync makes the
    index hold that folder alone, so evaluating on the bot's database would replace the
    team's documents with the evaluation's. A temporary SQLite file by default;
    `database_url` names a scratch database (PostgreSQL, say) whose index it replaces."""
    from bot.evals.scratch import scratch_database_url

    if database_url is None:
        with scratch_database_url("knowledge-eval") as scratch:
            return await evaluate(out, docs, data, half=half, database_url=scratch)
    from bot.evals.retrieval import HALVES, load_cases, report_lines
    from bot.evals.retrieval import evaluate as run
    from storage.database import Database

    cases = [c for c in load_cases(data) if half is None or c.half == half]
    db = await Database.open(database_url)
    try:
        report = await sync_folder(db, docs)
        out.write(f"{docs}: {report.summary()}\n")
        results = await run(db.knowledge, cases)
    except KnowledgeDocumentError as exc:
        out.write(f"knowledge eval failed: {exc}\n")
        return 1
    finally:
        await db.close()
    for line in report_lines(results, (half,) if half else HALVES):
        out.write(line + "\n")
    return 0
