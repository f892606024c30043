"""`support-bot`: the console entry point and its subcommands."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from bot.config import Settings
from bot.logging import configure_logging

NO_SLACK_MESSAGE = """\
support-bot: no Slack credentials are configured.

To run in Slack, set SLACK_BOT_TOKEN (xoxb-...) and either
  SLACK_APP_TOKEN (xapp-..., Socket Mode; no public URL needed), or
  SLACK_SIGNING_SECRET (HTTP mode; Slack posts to https://<host>/slack/events on PORT).
Create the app from manifest.yml (see README). Meanwhile, here is the bot in the terminal.
"""

# Each subcommand: name -> (help, add_arguments, run).
Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
COMMANDS: dict[str, Command] = {}


def command(
    name: str,
    help_text: str,
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    """Register a subcommand `run(args) -> exit code`."""

    def register(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        COMMANDS[name] = (help_text, add_arguments or (lambda _: None), run)
        return run

    return register


def _settings(*, quiet_at_terminal: bool = False) -> Settings:
    """Settings, with JSON logs on stderr. `quiet_at_terminal`: unless LOG_LEVEL is set,
    only warnings are logged when stderr is a terminal (the chat shares that screen)."""
    settings = Settings()
    level = settings.log_level
    if quiet_at_terminal and "log_level" not in settings.model_fields_set and sys.stderr.isatty():
        level = "WARNING"
    configure_logging(level)
    return settings


def _run(work: Coroutine[Any, Any, int]) -> int:
    """Run `work`; configuration problems (database, embedded model) end in one line."""
    from bot.local_model.weights import LocalModelError
    from storage.errors import StorageError

    try:
        return asyncio.run(work)
    except (StorageError, LocalModelError) as exc:
        print(f"support-bot: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


async def _serve(settings: Settings, serve: Callable[..., Awaitable[None]]) -> int:
    """Open the models and storage, then run `serve` until a signal stops it."""
    from bot.wiring import build_runner, build_summarizer, open_models
    from storage.database import Database

    async with open_models(settings) as models:
        db = await Database.open(settings.database_url)
        runner = build_runner(settings, db, models)
        summarizer = build_summarizer(settings, db, models)
        # The server closes the database on shutdown.
        await serve(settings, db=db, runner=runner, summarizer=summarizer)
    return 0


@command("serve", "Run in HTTP mode (POST /slack/events on PORT).")
def run_serve(args: argparse.Namespace) -> int:
    from bot.slack.server import serve_http

    settings = _settings()
    if settings.slack_bot_token is None or settings.slack_signing_secret is None:
        print("serve needs SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET.", file=sys.stderr)
        return 2
    return _run(_serve(settings, serve_http))


@command("socket", "Run in Socket Mode (needs SLACK_APP_TOKEN).")
def run_socket(args: argparse.Namespace) -> int:
    from bot.slack.server import serve_socket

    settings = _settings()
    if settings.slack_bot_token is None or settings.slack_app_token is None:
        print("socket needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN.", file=sys.stderr)
        return 2
    return _run(_serve(settings, serve_socket))


def _chat_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--user", help="the user id your messages are stored under (default: your login)"
    )


@command("chat", "Chat with the bot in the terminal (the default without Slack).", _chat_args)
def run_chat(args: argparse.Namespace) -> int:
    """The terminal chat: typed at a terminal, or fed lines on stdin."""
    from bot.terminal.chat import run_chat as chat

    settings = _settings(quiet_at_terminal=True)
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if not interactive:
        sys.stdout.reconfigure(errors="replace")  # type: ignore[union-attr]
    user = getattr(args, "user", None) or getpass.getuser()
    return _run(chat(settings, user_id=user, interactive=interactive, out=sys.stdout))


def _db_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["upgrade"], help="upgrade: apply pending migrations")
    parser.add_argument("--revision", default="head", help="target revision (default: head)")


@command("db", "Database schema: `db upgrade` applies pending migrations.", _db_args)
def run_db(args: argparse.Namespace) -> int:
    from bot.ops.commands import db_upgrade

    try:
        return db_upgrade(_settings(), sys.stdout, args.revision)
    except Exception as exc:  # alembic and driver errors: one line for the operator
        print(f"support-bot: database upgrade failed: {exc}", file=sys.stderr)
        return 1


def _digest_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--once", action="store_true", required=True, help="run one digest pass and exit"
    )


@command("digest", "Digest idle threads once (`digest --once`) and print what happened.",
         _digest_args)  # fmt: skip
def run_digest(args: argparse.Namespace) -> int:
    from bot.ops.commands import digest_once

    return _run(digest_once(_settings(), sys.stdout))


def _stats_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--live", metavar="URL", help="also show a running bot's counters (its /metrics URL)"
    )


@command("stats", "Operating figures from the database, as a table.", _stats_args)
def run_stats(args: argparse.Namespace) -> int:
    from bot.ops.commands import show_stats

    return _run(show_stats(_settings(), sys.stdout, live_url=args.live))


def _forget_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", required=True, help="the user id to forget")


@command("forget", "Delete everything stored about a user; print the counts.", _forget_args)
def run_forget(args: argparse.Namespace) -> int:
    from bot.ops.commands import forget

    return _run(forget(_settings(), sys.stdout, args.user))


def _eval_args(parser: argparse.ArgumentParser) -> None:
    which = parser.add_subparsers(dest="evaluation", required=True)
    for name, help_text in (
        ("summaries", "summarise conversations; entity recall, pass and fallback rates, cost"),
        ("routing", "route first messages through the supervisor; accuracy, confusion table"),
    ):
        child = which.add_parser(name, help=help_text)
        child.add_argument("--data", required=True, help="transcripts.jsonl")
        child.add_argument("--model", help="litellm model string (default: MODEL)")
        child.add_argument("--limit", type=int, help="evaluate every nth, this many in all")
        if name == "summaries":
            child.add_argument(
                "--seed-validator",
                action="store_true",
                help="also report under the seed's (less strict) validator",
            )
            child.add_argument(
                "--show-problems",
                action="store_true",
                help="print each conversation's first-attempt problems under its line",
            )
        else:
            child.add_argument(
                "--routes",
                help="route=agent pairs, e.g. billing=billing_agent,tech_support=tech_support;"
                " *=agent sets where other routes go (default support_supervisor)",
            )
            child.add_argument(
                "--route-only",
                action="store_true",
                help="decisions only: stop each case at the supervisor's transfer, and do not"
                " write the supervisor's own replies (so pretend actions are not measured)",
            )


@command("eval", "Evaluate on a dataset: `eval summaries` or `eval routing`.", _eval_args)
def run_eval(args: argparse.Namespace) -> int:
    from bot.evals.cli import eval_routing, eval_summaries

    settings = _settings()
    common = {"data": args.data, "model": args.model, "limit": args.limit}
    if args.evaluation == "summaries":
        work = eval_summaries(
            settings,
            sys.stdout,
            seed_validator=args.seed_validator,
            show_problems=args.show_problems,
            **common,
        )
    else:
        from bot.evals.routing import RouteMap

        try:
            RouteMap.parse(args.routes)
        except ValueError as exc:
            print(f"support-bot: {exc}", file=sys.stderr)
            return 2
        work = eval_routing(
            settings, sys.stdout, routes=args.routes, route_only=args.route_only, **common
        )
    return _run(work)


def run_auto(args: argparse.Namespace) -> int:
    """No subcommand: Socket Mode, else HTTP, else the local chat (DESIGN.md)."""
    mode = Settings().mode()
    if mode == "socket":
        return run_socket(args)
    if mode == "http":
        return run_serve(args)
    if sys.stdin.isatty() and sys.stderr.isatty():
        print(NO_SLACK_MESSAGE, file=sys.stderr)
    return run_chat(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="support-bot", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    for name, (help_text, add_arguments, run) in COMMANDS.items():
        child = sub.add_parser(name, help=help_text)
        add_arguments(child)
        child.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # litellm's own log handler writes INFO lines to stdout, which belongs to replies and
    # results; its warnings still reach stderr, and everything reaches our JSON log.
    os.environ.setdefault("LITELLM_LOG", "WARNING")
    args = build_parser().parse_args(argv)
    run = getattr(args, "run", None) or run_auto
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
