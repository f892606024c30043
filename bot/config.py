"""Settings: every knob the bot reads from the environment (and an optional `.env`)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from agents.models.profile import ChoiceScoring, DecisionLayout, ToolDecision
from bot.knowledge import SAMPLE_DIR

Mode = Literal["socket", "http", "chat"]

SummaryMode = Literal["incremental", "whole"]


class Settings(BaseSettings):
    """Typed configuration. Slack credentials have no default; everything else does.

    Secrets are `SecretStr` so that logging or printing a `Settings` never shows them.
    """

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", frozen=True)

    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_api_url: str = "https://slack.com/api/"
    support_lead_channel: str | None = None
    support_leads: Annotated[frozenset[str], NoDecode] = Field(
        default=frozenset(),
        description="User ids allowed to summarise or hand off any thread (comma separated).",
    )
    handoff_policy: Literal["members", "participants", "leads"] | None = Field(
        default=None,
        description="Who besides SUPPORT_LEADS may summarise, hand off or add a note to a "
        "thread in a channel: `members` of the channel, `participants` (members who wrote "
        "in the thread) or `leads` only. Unset: participants in shared and Slack Connect "
        "channels, members elsewhere.",
    )

    database_url: str = "sqlite+aiosqlite:///support_bot.db"
    model: str | None = Field(
        default=None,
        description="litellm model string; unset (or `local`) runs the embedded local model.",
    )
    summary_model: str | None = None
    summary_mode: SummaryMode = Field(
        default="incremental",
        description="`whole`: one summary of the whole thread when one is needed; "
        "`incremental`: a validated record per window of at least COMPACTION_INTERVAL "
        "invocations that holds a value (at most twice that without one), written as the "
        "thread goes and merged for digests, hand-offs and /summary.",
    )
    summary_complete_coverage: bool | None = Field(
        default=None,
        description="After each summary draft, one small call per checklist line it missed "
        "(unset: on for the embedded model only).",
    )
    summary_ground_citations: bool = Field(
        default=True,
        description="Point summary items that carry identifiers at the events holding them, "
        "re-cite items without values to the events that share their words (or drop them), "
        "move open questions a later agent turn answers to facts, and drop items copied "
        "from the summary instruction's worked example.",
    )
    tool_decision: ToolDecision = Field(
        default="auto",
        description="How an agent step with tools or transfer targets uses the model: "
        "`decide-first` (a constrained choice, then the reply or the tool's arguments), "
        "`one-call`, or `auto`: decide first on models without native tool calling "
        "(the embedded model), one call on the rest.",
    )
    decision_scoring: ChoiceScoring = Field(
        default="greedy",
        description="How a decide-first choice is read: `greedy` (the constrained answer), "
        "`logprobs` (the option whose name the model gives the most probability), or "
        "`calibrated`: each option's probability divided by its probability for a "
        "content-free message (one extra call per agent and set of options, kept). On the "
        "embedded model calibration routed worse (13 of the first 27 routing_dev messages "
        "against 25 greedy): a content-free message is rightly the supervisor's own. A "
        "server without log-probabilities: greedy.",
    )
    decision_layouts: Annotated[tuple[DecisionLayout, ...] | None, NoDecode] = Field(
        default=None,
        description="How a decide-first choice is laid out for the model, comma separated: "
        "`question` (the options listed under a question about the fenced conversation), "
        "`functions` (the options as function signatures, the conversation as chat turns), "
        "or both: each asked, read by log-probabilities and added. Unset: both on the "
        "embedded model, `question` on the rest.",
    )
    max_output_tokens: int = Field(
        default=400, description="Output token cap of an agent call (unless its YAML sets one)."
    )
    tool_agent_max_output_tokens: int = Field(
        default=120, description="Output token cap of an agent consulted through AgentTool."
    )
    compaction_model: str | None = None
    model_timeout_seconds: float = Field(
        default=60.0, gt=0, description="Per-call timeout of a hosted model (litellm)."
    )
    agent_tree_file: Path | None = Field(
        default=None, description="A YAML agent tree to run instead of agents/support_tree.yaml."
    )
    knowledge_dir: Path = Field(
        default=SAMPLE_DIR,
        description="The knowledge base folder (Markdown or text; one sub-folder per "
        "collection), synced at start; default: the shipped sample.",
    )
    model_api_base: str | None = None
    model_api_key: SecretStr | None = None

    idle_after_seconds: float = 1800
    digest_scan_seconds: float = 60
    digest_concurrency: int = Field(default=8, description="Summaries run at once per pass.")
    digest_lease_seconds: float = Field(
        default=600, description="A digest claim expires after this (a crashed process)."
    )
    delivery_retention_seconds: float = Field(
        default=172_800, description="How long processed Slack delivery ids are kept."
    )
    compaction_interval: int = Field(
        default=3, ge=1, description="Invocations between compactions (and summary windows)."
    )
    compaction_overlap: int = Field(
        default=1,
        ge=0,
        description="Invocations a compaction summarises again; below the interval.",
    )
    port: int = 3000
    host: str | None = Field(
        default=None,
        description="Interface for /slack/events, /healthz and /metrics (unset: 0.0.0.0 in "
        "HTTP mode, which Slack must reach; 127.0.0.1 in Socket Mode, which needs no inbound "
        "traffic, so health and metrics stay private unless opened here).",
    )

    http_max_connections: int | None = Field(
        default=None,
        gt=0,
        description="Connections the web server holds at once; one more closes one without "
        "a request in hand (bot/slack/connection_guard.py). Unset: half the process's file "
        "descriptor limit (`ulimit -n`), leaving the rest to the database and the Web API "
        "client.",
    )
    http_max_connections_per_peer: int | None = Field(
        default=None,
        gt=0,
        description="Connections the web server holds from one address (an IPv6 /64); one "
        "more from it closes that address's own longest-waiting half-sent one, or is refused, "
        "never closing another's. Unset: an eighth of the connection cap. Behind a reverse "
        "proxy every connection is the proxy's: set it to HTTP_MAX_CONNECTIONS there, which "
        "leaves only that cap.",
    )
    http_request_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="A connection that has not delivered a whole request (headers and body) "
        "this long after it opened or after its last response is closed: idle keep-alive, "
        "slow headers and slow bodies alike.",
    )
    http_keepalive_seconds: float = Field(
        default=75.0,
        gt=0,
        description="How long a connection whose last request succeeded (Slack's) may idle "
        "before its next request; longer than clients keep theirs, so none sends a request "
        "on a connection the bot has just closed.",
    )

    ops_allow_from: Annotated[tuple[str, ...], NoDecode] = Field(
        default=("127.0.0.0/8", "::1/128"),
        description="In HTTP mode, the networks /healthz and /metrics answer (comma "
        "separated); any other peer gets 404. Loopback by default: the events port is "
        "public, and a reverse proxy in front forwards only /slack/events "
        "(docs/http-mode.md).",
    )

    app_name: str = "support_bot"
    bot_answers_other_bots: bool = False
    max_concurrent_invocations: int = Field(
        default=32,
        gt=0,
        description="Model-bound work at once: replies, commands, shortcuts, digests, "
        "compaction (replies are served first when work waits).",
    )
    hold_starts_over_loop_lag_ms: float = Field(
        default=50,
        gt=0,
        description="While the event loop runs a 50 ms timer later than this on two "
        "samples in a row, accepted messages and other work wait (durably) before "
        "starting, so Slack's acks keep their CPU under overload; the oldest still starts "
        "on every timer tick.",
    )
    gc_young_threshold: int = Field(
        default=50_000,
        ge=0,
        description="Once serving, the start-up heap is frozen (gc.freeze) and a young "
        "garbage collection runs every this many net new container objects (Python's "
        "default is 700); 0 keeps Python's defaults. See bot/garbage_collector.py.",
    )
    user_rate_per_minute: float = Field(
        default=30,
        gt=0,
        description="Messages, commands and clicks one user may send per minute, counted in "
        "windows of USER_RATE_BURST requests in the database (shared by every process); "
        "beyond it the user is told the bot is busy.",
    )
    user_rate_burst: int = Field(
        default=20, gt=0, description="Requests one user may send at once before the rate applies."
    )
    max_thread_queue: int = Field(
        default=25,
        gt=0,
        description="Messages waiting in one thread; beyond it the user is told the bot is busy.",
    )
    dm_conversation_idle_minutes: float = Field(
        default=30,
        gt=0,
        description="A top-level DM message continues the DM's current conversation (one "
        "thread, one session, one digest) unless it has had no message for this long; "
        "`/new` ends it sooner.",
    )
    shutdown_timeout_seconds: float = 20.0
    chat_write_customize: bool = Field(
        default=False,
        description="Post replies under the agent's name. Needs the chat:write.customize "
        "scope, which manifest.yml does not request: add it under oauth_config.scopes.bot "
        "and reinstall the app before turning this on.",
    )
    streaming: Literal["auto", "off"] = Field(
        default="auto",
        description="auto: stream replies with chat.startStream where Slack allows it, "
        "falling back to a placeholder and chat.update; off: always the placeholder.",
    )
    event_loop: Literal["uvloop", "asyncio"] = Field(
        default="asyncio",
        description="asyncio: the standard library's loop; uvloop: run on uvloop (the "
        "`uvloop` extra; asyncio's loop where it is missing). uvloop measured no lower CPU "
        "per message under bench/slack_load.py, so it is not the default (issue 18).",
    )
    stream_append_seconds: float = Field(
        default=2.0,
        ge=0,
        description="Reply text is appended to a stream at most this often (Tier 4 limits).",
    )
    slack_retry_count: int = Field(
        default=8,
        description="Web API retries per call (429, 5xx, connection errors): ~90 s of patience.",
    )
    max_message_chars: int = 3000
    max_model_message_chars: int = Field(
        default=8000,
        gt=0,
        description="A user message longer than this is clipped, with a note, in what the "
        "model sees (storage keeps it whole).",
    )
    log_level: str = "INFO"
    heartbeat_seconds: float = Field(
        default=5.0,
        gt=0,
        description="How often each process records its heartbeat and sweeps for dead peers' work.",
    )
    owner_dead_after_seconds: float = Field(
        default=30.0,
        gt=0,
        description="A process that has not beaten for this long is dead: peers take over "
        "its unanswered messages and digest leases.",
    )
    thread_order_wait_seconds: float = Field(
        default=120.0,
        gt=0,
        description="How long a message waits for an earlier unanswered one in its thread "
        "(held by another process) before it is answered anyway.",
    )

    @field_validator("slack_bot_token", "slack_signing_secret", "slack_app_token", "model_api_key")
    @classmethod
    def _not_blank(cls, value: SecretStr | None) -> SecretStr | None:
        # An empty secret is a misconfiguration, not "unset": an empty signing key would
        # make every forged request verify.
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("is set but empty; unset it or give it a value")
        return value

    @field_validator("decision_layouts", mode="before")
    @classmethod
    def _parse_layouts(cls, value: object) -> object:
        if isinstance(value, str):
            layouts = tuple(v.strip() for v in value.split(",") if v.strip())
            return layouts or None
        return value

    @field_validator("ops_allow_from", mode="before")
    @classmethod
    def _parse_networks(cls, value: object) -> object:
        if isinstance(value, str):
            value = tuple(v.strip() for v in value.split(",") if v.strip())
        if isinstance(value, (tuple, list)):
            for network in value:
                ipaddress.ip_network(network, strict=False)  # a clear error at start-up
        return value

    @field_validator("support_leads", mode="before")
    @classmethod
    def _parse_leads(cls, value: object) -> object:
        if isinstance(value, str):
            return frozenset(v.strip() for v in value.split(",") if v.strip())
        return value

    @model_validator(mode="after")
    def _overlap_below_interval(self) -> Settings:
        if self.compaction_overlap >= self.compaction_interval:
            raise ValueError(
                f"COMPACTION_OVERLAP ({self.compaction_overlap}) must be below "
                f"COMPACTION_INTERVAL ({self.compaction_interval})"
            )
        return self

    def model_post_init(self, __context: object) -> None:
        if not self.slack_api_url.endswith("/"):
            object.__setattr__(self, "slack_api_url", self.slack_api_url + "/")

    def listen_host(self, *, socket_mode: bool) -> str:
        """Where the web server binds: `host` if set, else by mode (see `host`)."""
        if self.host is not None:
            return self.host
        return "127.0.0.1" if socket_mode else "0.0.0.0"

    def mode(self) -> Mode:
        """The start-up mode DESIGN.md prescribes: Socket Mode, HTTP, else the terminal chat."""
        if self.slack_app_token is not None and self.slack_bot_token is not None:
            return "socket"
        if self.slack_signing_secret is not None and self.slack_bot_token is not None:
            return "http"
        return "chat"


def secret(value: SecretStr | None) -> str | None:
    """The plain value of an optional secret."""
    return value.get_secret_value() if value is not None else None
