"""The dialect-specific half of the knowledge index: writing and querying `knowledge_fts`.

Both backends index the same words: each field's words reduced to their keys by
`agents.words.keyed` (the re-ranking's stemmer), which the database then only splits at
spaces (FTS5's `unicode61` tokenizer, PostgreSQL's `simple` configuration). The queries
are the keys of the query's terms, so a word matches a section on SQLite exactly when it
does on PostgreSQL, and exactly when the re-ranking counts it (the databases' own
stemmers, FTS5's porter and PostgreSQL's English Snowball, disagree on some words).

SQLite: an FTS5 table whose rowid is the section's `pk`, ranked by `bm25()` with the
title and heading columns weighted above the body. PostgreSQL: one weighted `tsvector`
per section (title A, heading B, body D) under a GIN index, ranked by `ts_rank`.
Queries are the OR of the terms' keys, which are alphanumeric (nothing of the user's
text reaches the query syntax unquoted).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agents.knowledge.ranking import CorpusStats
from agents.words import key, keyed

# bm25() column weights: title, heading, body. A heading that names the topic is worth
# more than the same words in a long body.
SQLITE_WEIGHTS = (4.0, 4.0, 1.0)
# ts_rank weights for D (body), C, B (heading), A (title).
POSTGRES_WEIGHTS = "{0.25, 0.4, 1.0, 1.0}"


async def add_rows(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Index sections: each row has `pk`, `title`, `heading` and `body`."""
    if not rows:
        return
    fields = ("title", "heading", "body")
    keyed_rows = [{"pk": row["pk"], **{f: keyed(row[f]) for f in fields}} for row in rows]
    if conn.dialect.name == "sqlite":
        statement = (
            "INSERT INTO knowledge_fts (rowid, title, heading, body)"
            " VALUES (:pk, :title, :heading, :body)"
        )
    else:
        statement = (
            "INSERT INTO knowledge_fts (section_pk, document) VALUES (:pk,"
            " setweight(to_tsvector('simple', :title), 'A')"
            " || setweight(to_tsvector('simple', :heading), 'B')"
            " || setweight(to_tsvector('simple', :body), 'D'))"
        )
    await conn.execute(sa.text(statement), keyed_rows)


async def remove_rows(conn: AsyncConnection, pks: Sequence[int]) -> None:
    """Drop sections from the index (PostgreSQL's rows also go with their section)."""
    if not pks:
        return
    statement = sa.text(
        "DELETE FROM knowledge_fts WHERE {} IN :pks".format(
            "rowid" if conn.dialect.name == "sqlite" else "section_pk"
        )
    ).bindparams(sa.bindparam("pks", expanding=True))
    await conn.execute(statement, {"pks": list(pks)})


async def field_lengths(conn: AsyncConnection) -> tuple[int, float, float, float]:
    """The section count and the average title, heading and body lengths (characters)."""
    totals = (
        await conn.execute(
            sa.text(
                "SELECT count(*), coalesce(avg(length(d.title)), 0),"
                " coalesce(avg(length(s.heading)), 0), coalesce(avg(length(s.body)), 0)"
                " FROM knowledge_sections s JOIN knowledge_documents d ON d.doc_id = s.doc_id"
            )
        )
    ).one()
    return int(totals[0]), float(totals[1]), float(totals[2]), float(totals[3])


async def corpus_stats(
    conn: AsyncConnection, terms: Sequence[str], lengths: tuple[int, float, float, float]
) -> CorpusStats:
    """`lengths` (from `field_lengths`) with each term's document frequency, counted in
    one statement (one round trip, whatever the number of terms)."""
    if conn.dialect.name == "sqlite":
        count = "SELECT count(*) FROM knowledge_fts WHERE knowledge_fts MATCH :t{n}"
        params = {f"t{n}": f'"{key(t)}"' for n, t in enumerate(terms)}
    else:
        count = "SELECT count(*) FROM knowledge_fts WHERE document @@ to_tsquery('simple', :t{n})"
        params = {f"t{n}": key(t) for n, t in enumerate(terms)}
    statement = " UNION ALL ".join(
        f"SELECT {n} AS n, ({count.format(n=n)}) AS df" for n in range(len(terms))
    )
    counts = {int(n): int(df) for n, df in await conn.execute(sa.text(statement), params)}
    doc_freq = {term: counts.get(n, 0) for n, term in enumerate(terms)}
    sections, avg_title, avg_heading, avg_body = lengths
    return CorpusStats(sections, doc_freq, avg_title, avg_heading, avg_body)


async def candidates(
    conn: AsyncConnection, terms: Sequence[str], collections: Sequence[str] | None, limit: int
) -> list[sa.Row[Any]]:
    """The best `limit` sections for the OR of `terms` (higher `score` is better).

    The full-text index alone ranks the matches and keeps the best `limit`; only those
    are joined to their sections and documents (joining every match first read and
    hashed the whole section table, and most of the time went there)."""
    keys = list(dict.fromkeys(key(t) for t in terms))
    params: dict[str, Any] = {"limit": limit}
    within = " AND s.collection IN :collections" if collections else ""
    if conn.dialect.name == "sqlite":
        params["query"] = " OR ".join(f'"{k}"' for k in keys)
        weights = ", ".join(str(w) for w in SQLITE_WEIGHTS)
        ranked = (
            f"SELECT f.rowid AS pk, -bm25(knowledge_fts, {weights}) AS score"
            " FROM knowledge_fts f"
            + (" JOIN knowledge_sections s ON s.pk = f.rowid" if collections else "")
            + " WHERE knowledge_fts MATCH :query"
        )
    else:
        params["query"] = " | ".join(keys)
        ranked = (
            f"SELECT f.section_pk AS pk, ts_rank('{POSTGRES_WEIGHTS}', f.document, q, 1) AS score"
            " FROM knowledge_fts f"
            + (" JOIN knowledge_sections s ON s.pk = f.section_pk" if collections else "")
            + ", to_tsquery('simple', :query) q WHERE f.document @@ q"
        )
    statement = sa.text(
        "SELECT s.section_id, s.doc_id, s.collection, d.title, d.url, s.heading, s.body,"
        f" s.position, top.score FROM ({ranked}{within} ORDER BY score DESC LIMIT :limit) top"
        " JOIN knowledge_sections s ON s.pk = top.pk"
        " JOIN knowledge_documents d ON d.doc_id = s.doc_id ORDER BY top.score DESC"
    )
    if collections:
        statement = statement.bindparams(sa.bindparam("collections", expanding=True))
        params["collections"] = list(collections)
    return list(await conn.execute(statement, params))
