"""`support-bot`: the console entry point and its subcommands (on click)."""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from bot.cli_knowledge import half_option, knowledge_commands
from bot.config import Settings
from bot.logging import configure_logging

NO_SLACK_MESSAGE = """\
support-bot: no Slack credentials are configured.

To run in Slack, set SLACK_BOT_TOKEN (xoxb-...) and either
  SLACK_APP_TOKEN (xapp-..., Socket Mode; no public URL needed), or
  SLACK_SIGNING_SECRET (HTTP mode; Slack posts to https://<host>/slack/events on PORT).
Create the app from manifest.yml (see README). Meanwhile, here is the bot in the terminal.
"""

DIGEST_ONCE_ONLY = """\
support-bot: `digest` runs one pass and exits: use `support-bot digest --once`.
The running bot digests idle threads by itself, every DIGEST_SCAN_SECONDS.
"""


def _load_settings() -> Settings:
    """Settings from the environment; a bad value ends the command with one line each."""
    try:
        return Settings()
    except ValidationError as exc:
        for error in exc.errors():
            name = str(error["loc"][0]).upper() if error["loc"] else "configuration"
            message = str(error["msg"]).removeprefix("Value error, ")
            print(f"support-bot: {name} {message}", file=sys.stderr)
        raise SystemExit(2) from None


def _settings(*, quiet_at_terminal: bool = True) -> Settings:
    """Settings, with JSON logs on stderr. `quiet_at_terminal`: unless LOG_LEVEL is set,
    only warnings are logged when stderr is a terminal (the chat, and a command's output or
    progress bar, share that screen); a server (`serve`, `socket`) logs at LOG_LEVEL."""
    settings = _load_settings()
    level = settings.log_level
    if quiet_at_terminal and "log_level" not in settings.model_fields_set and sys.stderr.isatty():
        level = "WARNING"
    configure_logging(level)
    return settings


def _run(work: Coroutine[Any, Any, int], settings: Settings) -> int:
    """Run `work` on the configured event loop (`EVENT_LOOP`: the standard library's by
    default, uvloop as an option); configuration problems (database, embedded model) end
    in one line."""
    from bot.event_loop import run
    from bot.local_model.weights import LocalModelError
    from storage.errors import StorageError

    try:
        return run(work, settings.event_loop)
    except (StorageError, LocalModelError) as exc:
        print(f"support-bot: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


async def _serve(settings: Settings, serve: Callable[..., Awaitable[None]]) -> int:
    """Open the models and storage, then run `serve` until a signal stops it; on SQLite,
    marked as running for operator commands that must not race it (`bot.ops.running`)."""
    from bot.models import open_models
    from bot.ops.knowledge import sync_at_start
    from bot.ops.running import bot_running
    from bot.wiring import build_runner, build_summarizer, loop_lag_gate, work_limit
    from storage.database import Database

    with bot_running(settings.database_url):
        async with open_models(settings) as models:
            db = await Database.open(settings.database_url)
            await sync_at_start(settings, db)
            # One slot count for replies and the runner's window summaries alike.
            gate = loop_lag_gate(settings)
            limit = work_limit(settings, gate)
            runner = build_runner(settings, db, models, limit)
            summarizer = build_summarizer(settings, db, models)
            # The server closes the database on shutdown.
            await serve(
                settings, db=db, runner=runner, summarizer=summarizer, limit=limit, gate=gate
            )
    return 0


@click.group(
    invoke_without_command=True,
    help="A Slack support bot. Without a command it runs in Socket Mode, else in HTTP mode, "
    "else as a chat in the terminal, by what is configured.",
)
@click.pass_context
def cli(ctx: click.Context) -> int:
    """No subcommand: Socket Mode, else HTTP, else the local chat (DESIGN.md)."""
    if ctx.invoked_subcommand is not None:
        return 0
    mode = _load_settings().mode()
    if mode == "socket":
        return run_socket()
    if mode == "http":
        return run_serve()
    if sys.stdin.isatty() and sys.stderr.isatty():
        print(NO_SLACK_MESSAGE, file=sys.stderr)
    return run_chat(user=None)


def run_serve() -> int:
    """HTTP mode, when its credentials are configured."""
    from bot.slack.server import serve_http

    settings = _settings(quiet_at_terminal=False)
    if settings.slack_bot_token is None or settings.slack_signing_secret is None:
        print("serve needs SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET.", file=sys.stderr)
        return 2
    return _run(_serve(settings, serve_http), settings)


def run_socket() -> int:
    """Socket Mode, when its credentials are configured."""
    from bot.slack.server import serve_socket

    settings = _settings(quiet_at_terminal=False)
    if settings.slack_bot_token is None or settings.slack_app_token is None:
        print("socket needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN.", file=sys.stderr)
        return 2
    return _run(_serve(settings, serve_socket), settings)


def run_chat(user: str | None) -> int:
    """The terminal chat: typed at a terminal, or fed lines on stdin."""
    from bot.terminal.chat import run_chat as chat

    settings = _settings()
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if not interactive:
        sys.stdout.reconfigure(errors="replace")  # type: ignore[union-attr]
    user_id = user or getpass.getuser()
    return _run(chat(settings, user_id=user_id, interactive=interactive, out=sys.stdout), settings)


@cli.command("serve", help="Run in HTTP mode (POST /slack/events on PORT).")
def serve_command() -> int:
    return run_serve()


@cli.command("socket", help="Run in Socket Mode (needs SLACK_APP_TOKEN).")
def socket_command() -> int:
    return run_socket()


@cli.command("chat", help="Chat with the bot in the terminal (the default without Slack).")
@click.option("--user", help="the user id your messages are stored under (default: your login)")
def chat_command(user: str | None) -> int:
    return run_chat(user)


@cli.group("db", help="Database schema: `db upgrade` applies pending migrations.")
def db_group() -> None:
    """The `db` subcommands."""


@db_group.command("upgrade", help="Apply pending migrations.")
@click.option("--revision", default="head", show_default=True, help="target revision")
def run_db_upgrade(revision: str) -> int:
    from bot.ops.commands import db_upgrade

    try:
        return db_upgrade(_settings(), sys.stdout, revision)
    except Exception as exc:  # alembic and driver errors: one line for the operator
        print(f"support-bot: database upgrade failed: {exc}", file=sys.stderr)
        return 1


@cli.command("digest", help="Digest idle threads once (`digest --once`) and print what happened.")
@click.option("--once", is_flag=True, help="run one digest pass and exit (the only mode today)")
def run_digest(once: bool) -> int:
    from bot.ops.commands import digest_once

    if not once:
        print(DIGEST_ONCE_ONLY, end="", file=sys.stderr)
        return 2
    settings = _settings()
    return _run(digest_once(settings, sys.stdout), settings)


@cli.command("stats", help="Operating figures from the database, as a table.")
@click.option("--live", metavar="URL", help="also show a running bot's counters (its /metrics URL)")
def run_stats(live: str | None) -> int:
    from bot.ops.commands import show_stats

    settings = _settings()
    return _run(show_stats(settings, sys.stdout, live_url=live), settings)


@cli.command("forget", help="Delete everything stored about a user; print the counts.")
@click.option("--user", required=True, help="the user id to forget")
def run_forget(user: str) -> int:
    from bot.ops.commands import forget

    settings = _settings()
    return _run(forget(settings, sys.stdout, user), settings)


cli.add_command(knowledge_commands(_settings, _run))


@cli.group("eval", help="Evaluate on a dataset: `eval summaries`, `routing` or `answers`.")
def eval_group() -> None:
    """The `eval` subcommands."""


def _dataset_options(command: Callable[..., int]) -> Callable[..., int]:
    """--data, --model and --limit, shared by the evaluations."""
    for option in reversed(
        (
            click.option(
                "--data", required=True, help="the dataset (JSONL; see docs/evaluations.md)"
            ),
            click.option("--model", help="litellm model string (default: MODEL)"),
            click.option("--limit", type=int, help="evaluate every nth, this many in all"),
        )
    ):
        command = option(command)
    return command


@eval_group.command(
    "summaries", help="summarise conversations; entity recall, pass and fallback rates, cost"
)
@_dataset_options
@click.option(
    "--seed-validator", is_flag=True, help="also report under the seed's (less strict) validator"
)
@click.option(
    "--show-problems",
    is_flag=True,
    help="print each conversation's first-attempt problems under its line",
)
@click.option(
    "--mode",
    type=click.Choice(["both", "incremental", "whole"]),
    default="both",
    show_default=True,
    help="SUMMARY_MODE to evaluate: window records replayed as live and merged, the whole "
    "thread at once, or both side by side on the same conversations",
)
@half_option
def run_eval_summaries(
    data: str,
    model: str | None,
    limit: int | None,
    seed_validator: bool,
    show_problems: bool,
    mode: str,
    half: str | None,
) -> int:
    from bot.evals.cli import eval_summaries

    settings = _settings()
    work = eval_summaries(
        settings,
        sys.stdout,
        data=data,
        model=model,
        limit=limit,
        seed_validator=seed_validator,
        show_problems=show_problems,
        mode=mode,
        half=half,
    )
    return _run(work, settings)


@eval_group.command(
    "routing", help="route first messages through the supervisor; accuracy, confusion table"
)
@_dataset_options
@click.option(
    "--routes",
    help="route=agent pairs, e.g. billing=billing_agent,tech_support=tech_support;"
    " *=agent sets where other routes go (default support_supervisor)",
)
@click.option(
    "--route-only",
    is_flag=True,
    help="decisions only: stop each case at the supervisor's transfer, and do not"
    " write the supervisor's own replies (so pretend actions are not measured)",
)
@half_option
def run_eval_routing(
    data: str,
    model: str | None,
    limit: int | None,
    routes: str | None,
    route_only: bool,
    half: str | None,
) -> int:
    from bot.evals.cli import eval_routing
    from bot.evals.routing import RouteMap

    settings = _settings()
    try:
        RouteMap.parse(routes)
    except ValueError as exc:
        print(f"support-bot: {exc}", file=sys.stderr)
        return 2
    work = eval_routing(
        settings,
        sys.stdout,
        data=data,
        model=model,
        limit=limit,
        routes=routes,
        route_only=route_only,
        half=half,
    )
    return _run(work, settings)


@eval_group.command(
    "answers",
    help="answer a questions.jsonl (--data) from a folder of documents through the tree;"
    " retrieval hits, key facts, token F1, unsupported values, honesty, seconds",
)
@_dataset_options
@click.option("--docs", type=click.Path(exists=True, path_type=Path), required=True)
@half_option
@click.option(
    "--only",
    type=click.Choice(["answerable", "unanswerable"]),
    help="keep only these questions (before --limit)",
)
@click.option(
    "--no-model",
    is_flag=True,
    help="retrieval and the relevance rule alone: which questions keep a section",
)
def run_eval_answers(
    data: str,
    model: str | None,
    limit: int | None,
    docs: Path,
    half: str | None,
    only: str | None,
    no_model: bool,
) -> int:
    from bot.evals.cli import eval_answers

    settings = _settings()
    work = eval_answers(
        settings,
        sys.stdout,
        docs=docs,
        data=Path(data),
        model=model,
        limit=limit,
        half=half,
        only=only,
        no_model=no_model,
    )
    return _run(work, settings)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: the exit code of the command (2 for a usage error)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # litellm's own log handler writes INFO lines to stdout, which belongs to replies and
    # results; its warnings still reach stderr, and everything reaches our JSON log.
    os.environ.setdefault("LITELLM_LOG", "WARNING")
    try:
        code = cli.main(
            args=list(argv) if argv is not None else None,
            prog_name="support-bot",
            standalone_mode=False,
        )
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        return 130
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
