"""`support-bot`: the console entry point and its subcommands."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Sequence

from bot.config import Settings
from bot.logging import configure_logging

NO_SLACK_MESSAGE = """\
support-bot: no Slack credentials are configured.

To run in Slack, set SLACK_BOT_TOKEN (xoxb-...) and either
  SLACK_APP_TOKEN (xapp-..., Socket Mode; no public URL needed), or
  SLACK_SIGNING_SECRET (HTTP mode; Slack posts to https://<host>/slack/events on PORT).
Create the app from manifest.yml (see README). The local terminal chat is not available yet.
"""

# Each subcommand: name -> (help, add_arguments, run). Other subcommands (chat, db upgrade,
# digest, stats, eval, forget) register here the same way.
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


def _settings() -> Settings:
    settings = Settings()
    configure_logging(settings.log_level)
    return settings


@command("serve", "Run in HTTP mode (POST /slack/events on PORT).")
def run_serve(args: argparse.Namespace) -> int:
    from bot.server import serve_http

    settings = _settings()
    if settings.slack_bot_token is None or settings.slack_signing_secret is None:
        print("serve needs SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET.", file=sys.stderr)
        return 2
    asyncio.run(serve_http(settings))
    return 0


@command("socket", "Run in Socket Mode (needs SLACK_APP_TOKEN).")
def run_socket(args: argparse.Namespace) -> int:
    from bot.server import serve_socket

    settings = _settings()
    if settings.slack_bot_token is None or settings.slack_app_token is None:
        print("socket needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN.", file=sys.stderr)
        return 2
    asyncio.run(serve_socket(settings))
    return 0


def run_chat(args: argparse.Namespace) -> int:
    """The no-Slack path. Replaced by the terminal chat (`chat` subcommand) when it lands."""
    chat = COMMANDS.get("chat")
    if chat is not None:
        return chat[2](args)
    print(NO_SLACK_MESSAGE)
    return 0


def run_auto(args: argparse.Namespace) -> int:
    """No subcommand: Socket Mode, else HTTP, else the local chat (DESIGN.md)."""
    mode = Settings().mode()
    if mode == "socket":
        return run_socket(args)
    if mode == "http":
        return run_serve(args)
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
    args = build_parser().parse_args(argv)
    run = getattr(args, "run", None) or run_auto
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
