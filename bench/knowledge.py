"""Knowledge index benchmark: indexing 10,000 generated sections, and search latency
(p50, p95) on SQLite and PostgreSQL. Targets: indexing under 30 s, search p95 under 50 ms.

The CPU time this process spends per search is printed too: on SQLite it is nearly all
of a search (the database runs in the process), and unlike wall time it hardly moves with
the machine's load.

Run: .venv/bin/python bench/knowledge.py
PostgreSQL is `BENCH_POSTGRES_URL` when set, else an embedded server in a temp dir.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.knowledge.documents import Document, Section
from bench.storage import postgres_database, postgres_server
from storage import Database

DOCUMENTS = 1_000
SECTIONS_PER_DOCUMENT = 10
QUERIES = 200
BODY_WORDS = 90
COLLECTIONS = ("policies", "billing", "tech", "accounts")


def _vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(5_000)]


def documents(seed: int = 7) -> tuple[list[Document], list[str]]:
    """`DOCUMENTS` generated documents of `SECTIONS_PER_DOCUMENT` sections, and queries
    made of words the sections use (Zipf-like word frequencies, as in real text)."""
    rng = random.Random(seed)
    words = _vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    docs = []
    for n in range(DOCUMENTS):
        doc_id = f"{COLLECTIONS[n % len(COLLECTIONS)]}/doc-{n}"
        sections = tuple(
            Section(
                id=f"{doc_id}#s{i}",
                doc_id=doc_id,
                position=i,
                heading=" ".join(rng.choices(words, weights, k=5)),
                text=" ".join(rng.choices(words, weights, k=BODY_WORDS)),
            )
            for i in range(SECTIONS_PER_DOCUMENT)
        )
        body = "".join(s.heading + s.text for s in sections)
        docs.append(
            Document(
                doc_id=doc_id,
                collection=COLLECTIONS[n % len(COLLECTIONS)],
                title=" ".join(rng.choices(words, weights, k=4)),
                url=None,
                path=f"{doc_id}.md",
                content_hash=hashlib.sha256(body.encode()).hexdigest(),
                sections=sections,
            )
        )
    queries = [
        "how do I " + " ".join(rng.choices(words[:2_000], k=rng.randint(3, 8)))
        for _ in range(QUERIES)
    ]
    return docs, queries


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def _bench(label: str, url: str) -> None:
    docs, queries = documents()
    sections = DOCUMENTS * SECTIONS_PER_DOCUMENT
    db = await Database.open(url)
    try:
        start = time.perf_counter()
        report = await db.knowledge.sync(docs)
        indexing = time.perf_counter() - start
        assert len(report.added) == DOCUMENTS, report.summary()
        start = time.perf_counter()
        again = await db.knowledge.sync(docs)
        resync = time.perf_counter() - start
        assert len(again.unchanged) == DOCUMENTS, again.summary()
        timings = []
        cpu = time.process_time()
        for query in queries:
            start = time.perf_counter()
            hits = await db.knowledge.search(query, limit=5)
            timings.append(time.perf_counter() - start)
            assert hits, query
        cpu = time.process_time() - cpu
    finally:
        await db.close()
    print(f"{label}:")
    print(f"  indexing {sections:,} sections:        {indexing:8.2f} s")
    print(f"  re-sync, nothing changed:         {resync:8.2f} s")
    print(f"  search p50 ({QUERIES} queries):       {statistics.median(timings) * 1000:8.2f} ms")
    print(f"  search p95 ({QUERIES} queries):       {_percentile(timings, 0.95) * 1000:8.2f} ms")
    print(f"  this process's CPU per search:    {cpu / len(queries) * 1000:8.2f} ms")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-knowledge") as tmp:
        asyncio.run(_bench("SQLite (FTS5)", f"sqlite+aiosqlite:///{tmp}/bench.db"))
        with postgres_server(tmp) as admin_url:
            url = asyncio.run(postgres_database(admin_url))
            asyncio.run(_bench("PostgreSQL (full-text search)", url))


if __name__ == "__main__":
    main()
