"""The tables, as SQLAlchemy Core metadata; the Alembic migrations build exactly this.

Events keep their full JSON in `data` (the source of truth when loading) next to the
columns that are queried. Sessions carry the counters that make appends and
`since_compaction` loading cheap: `last_seq` (the per-session event id counter) and the
latest compaction's own seq and window start. App and user state live in their own
tables, one row per key, so concurrent writers to different keys never lose updates.
"""

from __future__ import annotations

import sqlalchemy as sa

# BIGINT on PostgreSQL; SQLite only auto-increments an INTEGER PRIMARY KEY.
RowId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

sessions = sa.Table(
    "sessions",
    metadata,
    sa.Column("pk", RowId, primary_key=True, autoincrement=True),
    sa.Column("app_name", sa.String(128), nullable=False),
    sa.Column("user_id", sa.String(128), nullable=False),
    sa.Column("session_id", sa.String(128), nullable=False),
    sa.Column("state", sa.JSON, nullable=False),
    sa.Column("last_seq", sa.Integer, nullable=False, server_default="0"),
    sa.Column("compaction_seq", sa.Integer, nullable=False, server_default="0"),
    sa.Column("compaction_start_seq", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.UniqueConstraint("app_name", "user_id", "session_id"),
    sa.Index(None, "user_id"),
)

events = sa.Table(
    "events",
    metadata,
    sa.Column("pk", RowId, primary_key=True, autoincrement=True),
    sa.Column(
        "session_pk",
        RowId,
        sa.ForeignKey("sessions.pk", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("event_id", sa.String(32), nullable=False),
    sa.Column("invocation_id", sa.String(64), nullable=False),
    sa.Column("author", sa.String(128), nullable=False),
    sa.Column("timestamp", sa.Float, nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    # The event's `custom_metadata` (also in `data`), here to be queried; NULL when empty.
    sa.Column("custom_metadata", sa.JSON, nullable=True),
    sa.UniqueConstraint("session_pk", "seq"),
)

app_state = sa.Table(
    "app_state",
    metadata,
    sa.Column("app_name", sa.String(128), primary_key=True),
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("value", sa.JSON, nullable=True),
    sa.Column("updated_at", sa.Float, nullable=False),
)

user_state = sa.Table(
    "user_state",
    metadata,
    sa.Column("app_name", sa.String(128), primary_key=True),
    sa.Column("user_id", sa.String(128), primary_key=True),
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("value", sa.JSON, nullable=True),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Index(None, "user_id"),
)

threads = sa.Table(
    "threads",
    metadata,
    sa.Column("team_id", sa.String(32), primary_key=True),
    sa.Column("channel_id", sa.String(32), primary_key=True),
    sa.Column("thread_ts", sa.String(32), primary_key=True),
    sa.Column("session_id", sa.String(128), nullable=False),
    sa.Column("app_name", sa.String(128), nullable=False),
    sa.Column("user_id", sa.String(128), nullable=False),
    sa.Column("status", sa.String(16), nullable=False, server_default="active"),
    sa.Column("owner_agent", sa.String(128), nullable=True),
    sa.Column("last_activity_at", sa.Float, nullable=False),
    sa.Column("needs_attention", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("attention_reason", sa.Text, nullable=True),
    sa.Column("digest_state", sa.String(16), nullable=False, server_default="pending"),
    sa.Column("last_digest_id", RowId, nullable=True),
    sa.Column("last_digested_seq", sa.Integer, nullable=False, server_default="0"),
    sa.Column("lease_owner", sa.String(128), nullable=True),
    sa.Column("lease_expires_at", sa.Float, nullable=True),
    sa.Column("source_session_id", sa.String(128), nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index(None, "session_id"),
    sa.Index(None, "user_id"),
    # find_idle is a range scan over pending threads ordered by last activity.
    sa.Index("ix_threads_idle", "digest_state", "last_activity_at"),
)

deliveries = sa.Table(
    "deliveries",
    metadata,
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index(None, "created_at"),
)

# Slack messages accepted but not yet answered: written before the HTTP ack, removed once
# the reply (or a failure notice) is posted. What is left after a crash is what a start-up
# sweep must finish: re-run a message that never started, or tell the thread.
inflight = sa.Table(
    "inflight",
    metadata,
    sa.Column("team_id", sa.String(32), primary_key=True),
    sa.Column("channel_id", sa.String(32), primary_key=True),
    sa.Column("message_ts", sa.String(32), primary_key=True),
    sa.Column("thread_ts", sa.String(32), nullable=False),
    sa.Column("message", sa.JSON, nullable=False),
    sa.Column("stage", sa.String(16), nullable=False, server_default="accepted"),
    sa.Column("invocation_id", sa.String(64), nullable=True),
    sa.Column("placeholder_ts", sa.String(32), nullable=True),
    # The reply streamed into Slack (chat.startStream), when it streams (migration 0006).
    sa.Column("stream_ts", sa.String(32), nullable=True),
    sa.Column("owner", sa.String(128), nullable=False),
    sa.Column("accepted_at", sa.Float, nullable=False),
    sa.Column("started_at", sa.Float, nullable=True),
    sa.Index(None, "owner"),
)

# One row per bot process: its identity (`bot.wiring.process_owner`) and its last
# heartbeat. In-flight rows and digest leases of an owner that stopped beating are taken
# over by a live process; a live owner's work never is.
owners = sa.Table(
    "owners",
    metadata,
    sa.Column("owner", sa.String(128), primary_key=True),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("beat_at", sa.Float, nullable=False),
    sa.Index(None, "beat_at"),
)

digests = sa.Table(
    "digests",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    sa.Column("record", sa.JSON, nullable=False),
    sa.Column("source_session_id", sa.String(128), nullable=False),
    sa.Column("user_id", sa.String(128), nullable=True),
    sa.Column("team_id", sa.String(32), nullable=True),
    sa.Column("channel_id", sa.String(32), nullable=True),
    sa.Column("thread_ts", sa.String(32), nullable=True),
    sa.Column("cited_event_ids", sa.JSON, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("problems", sa.JSON, nullable=False),
    sa.Column("cost", sa.Float, nullable=False),
    sa.Column("prompt_tokens", sa.Integer, nullable=False),
    sa.Column("completion_tokens", sa.Integer, nullable=False),
    sa.Column("slack_ts", sa.String(32), nullable=True),
    sa.Column("supersedes_digest_id", RowId, nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    # The session's last event the digest covers: one digest per (session, last event).
    sa.Column("last_seq", sa.Integer, nullable=True),
    # "digest" (a validated record) or "unavailable" (no record passed validation: the
    # row is the durable intent of the notice, and `problems` says why).
    sa.Column("kind", sa.String(16), nullable=False, server_default="digest"),
    sa.Index(None, "source_session_id"),
    sa.Index(None, "user_id"),
    sa.Index("ix_digests_session_last_seq", "source_session_id", "last_seq", unique=True),
)

# Every Slack message a digest was posted as in the lead channel (a long digest is
# several pages), so that deleting a digest deletes all of it.
digest_messages = sa.Table(
    "digest_messages",
    metadata,
    sa.Column("digest_id", RowId, primary_key=True),
    sa.Column("page", sa.Integer, primary_key=True),
    sa.Column("ts", sa.String(32), nullable=False),
)

# The conversation a DM's top-level messages continue: its root message and when it
# last had a message (`storage.dm_conversations`).
dm_conversations = sa.Table(
    "dm_conversations",
    metadata,
    sa.Column("team_id", sa.String(32), primary_key=True),
    sa.Column("channel_id", sa.String(32), primary_key=True),
    sa.Column("root_ts", sa.String(32), nullable=False),
    sa.Column("last_at", sa.Float, nullable=False),
)

# A top-level DM message folded into an earlier conversation (`root_ts`): a reply in the
# Slack thread under it joins that conversation (`storage.dm_conversations`).
dm_folded = sa.Table(
    "dm_folded",
    metadata,
    sa.Column("team_id", sa.String(32), primary_key=True),
    sa.Column("channel_id", sa.String(32), primary_key=True),
    sa.Column("message_ts", sa.String(32), primary_key=True),
    sa.Column("root_ts", sa.String(32), nullable=False),
)

memory = sa.Table(
    "memory",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    sa.Column("user_id", sa.String(128), nullable=False),
    sa.Column("session_id", sa.String(128), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("event_ids", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index(None, "user_id"),
)

summary_runs = sa.Table(
    "summary_runs",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.String(128), nullable=False),
    sa.Column("first_attempt_pass", sa.Boolean, nullable=False),
    sa.Column("fallback", sa.Boolean, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("problems", sa.JSON, nullable=False),
    sa.Column("prompt_tokens", sa.Integer, nullable=False),
    sa.Column("completion_tokens", sa.Integer, nullable=False),
    sa.Column("cost", sa.Float, nullable=False),
    sa.Column("latency_s", sa.Float, nullable=False),
    sa.Column("model", sa.String(128), nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index(None, "session_id"),
)

# What a consumer received of a summary, one row per delivery: `surface` is `digest`,
# `summary` (`/summary`) or `handoff`; `outcome` is `validated`, `partial` (a record with
# gap windows) or `none` (no summary: the consumer got the raw thread or a notice).
summary_deliveries = sa.Table(
    "summary_deliveries",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.String(128), nullable=False),
    sa.Column("surface", sa.String(16), nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("windows", sa.Integer, nullable=False),
    sa.Column("gaps", sa.Integer, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

# Window records (`SUMMARY_MODE=incremental`): one validated handoff record (or a named
# gap) per window of a session's events, `start_seq`..`end_seq`. `fingerprint` names the
# events the record was built from, so a window whose events changed is rebuilt.
summary_windows = sa.Table(
    "summary_windows",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.String(128), nullable=False),
    sa.Column("start_seq", sa.Integer, nullable=False),
    sa.Column("end_seq", sa.Integer, nullable=False),
    sa.Column("start_event_id", sa.String(32), nullable=False),
    sa.Column("end_event_id", sa.String(32), nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("closed", sa.Boolean, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("record", sa.JSON, nullable=True),
    sa.Column("problems", sa.JSON, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("first_attempt_pass", sa.Boolean, nullable=False),
    sa.Column("prompt_tokens", sa.Integer, nullable=False),
    sa.Column("completion_tokens", sa.Integer, nullable=False),
    sa.Column("cost", sa.Float, nullable=False),
    sa.Column("latency_s", sa.Float, nullable=False),
    sa.Column("closed_by", sa.String(16), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("session_id", "start_seq"),
)

# One row per (reply, person): the last feedback button they clicked on an AI reply.
# `event_id` is the reply's event in `session_id`; `agent` is the event's author, kept
# here so counts per agent need no event scan. A redelivered click finds its row.
feedback = sa.Table(
    "feedback",
    metadata,
    sa.Column("session_id", sa.String(128), primary_key=True),
    sa.Column("event_id", sa.String(32), primary_key=True),
    sa.Column("user_id", sa.String(128), primary_key=True),
    sa.Column("agent", sa.String(128), nullable=False),
    sa.Column("value", sa.String(16), nullable=False),
    # `customer` (the thread's owner) or `staff` (anyone else): who marked, for digests.
    sa.Column("marker", sa.String(16), nullable=False, server_default="customer"),
    sa.Column("team_id", sa.String(32), nullable=False),
    sa.Column("channel_id", sa.String(32), nullable=False),
    sa.Column("thread_ts", sa.String(32), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Index(None, "user_id"),
)

# One row per user: the requests they made in their current rate window, counted here so
# the limit holds however many bot processes share the database (`storage.rates`).
# `told` is set once the user was told they are over it, so they are told once a window.
user_rates = sa.Table(
    "user_rates",
    metadata,
    sa.Column("user_id", sa.String(128), primary_key=True),
    sa.Column("window_start", sa.Float, nullable=False),
    sa.Column("count", sa.Integer, nullable=False),
    sa.Column("told", sa.Boolean, nullable=False),
)

# The knowledge base (`storage.knowledge`): one row per indexed file, its hash deciding
# whether a sync re-indexes it, and one row per section. The full-text index over the
# sections is dialect-specific and lives outside this metadata (see `SEARCH_INDEX`).
knowledge_documents = sa.Table(
    "knowledge_documents",
    metadata,
    sa.Column("doc_id", sa.String(255), primary_key=True),
    sa.Column("collection", sa.String(64), nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("url", sa.Text, nullable=True),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("indexed_at", sa.Float, nullable=False),
)

knowledge_sections = sa.Table(
    "knowledge_sections",
    metadata,
    sa.Column("pk", RowId, primary_key=True, autoincrement=True),
    sa.Column("section_id", sa.String(400), nullable=False),
    sa.Column(
        "doc_id",
        sa.String(255),
        sa.ForeignKey("knowledge_documents.doc_id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("collection", sa.String(64), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("heading", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.UniqueConstraint("section_id"),
    sa.Index(None, "doc_id"),
)

# The sections' full-text index: an FTS5 virtual table on SQLite (its shadow tables share
# the prefix), a table of weighted `tsvector`s under a GIN index on PostgreSQL. Migration
# 0014_knowledge builds it and 0015_knowledge_keys makes it index word keys; schema
# comparisons leave it out (`include_name`).
SEARCH_INDEX = "knowledge_fts"


def include_name(name: str | None, type_: str, _parent_names: object) -> bool:
    """Alembic's `include_name` hook: everything but the dialect-specific search index."""
    return not (type_ == "table" and name is not None and name.startswith(SEARCH_INDEX))
