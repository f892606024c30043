"""`support-bot knowledge sync | search | eval` (on click), and the `--half` option the
evaluations share. Each command only parses arguments; the work is `bot.ops.knowledge`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import click

from bot.config import Settings

half_option = click.option(
    "--half",
    type=click.Choice(["look", "measure"]),
    help="only one fixed half of the cases (a seeded hash of each id): look at one while"
    " tuning, measure the other at the end",
)


def knowledge_commands(
    settings: Callable[[], Settings], run: Callable[[Coroutine[Any, Any, int], Settings], int]
) -> click.Group:
    """The `knowledge` group; `settings` loads the configuration and `run` runs a command's
    work to its exit code (both from `bot.cli`)."""

    @click.group("knowledge", help="The knowledge base: `knowledge sync`, `search` or `eval`.")
    def knowledge_group() -> None:
        """The `knowledge` subcommands (`bot.ops.knowledge`)."""

    @knowledge_group.command("sync", help="Index the knowledge folder; print what changed.")
    @click.option("--dir", "folder", type=click.Path(path_type=Path), help="default: KNOWLEDGE_DIR")
    def run_knowledge_sync(folder: Path | None) -> int:
        from bot.ops import knowledge

        loaded = settings()
        return run(knowledge.sync(loaded, sys.stdout, folder), loaded)

    @knowledge_group.command("search", help="Show the sections an agent would find for QUERY.")
    @click.argument("query")
    @click.option("--collection", "collections", multiple=True, help="only this collection")
    @click.option("--limit", default=5, show_default=True, type=click.IntRange(1, 50))
    def run_knowledge_search(query: str, collections: tuple[str, ...], limit: int) -> int:
        from bot.ops import knowledge

        loaded = settings()
        found = knowledge.search(
            loaded, sys.stdout, query, collections=list(collections), limit=limit
        )
        return run(found, loaded)

    @knowledge_group.command("eval", help="Retrieval hit@1/@5 of a question set on its documents.")
    @click.option("--docs", type=click.Path(exists=True, path_type=Path), required=True)
    @click.option("--data", type=click.Path(exists=True, path_type=Path), required=True)
    @half_option
    @click.option(
        "--database-url",
        help="a scratch database to index into (its knowledge index is replaced);"
        " default: a temporary SQLite file, never DATABASE_URL",
    )
    def run_knowledge_eval(
        docs: Path, data: Path, half: str | None, database_url: str | None
    ) -> int:
        from bot.ops import knowledge

        loaded = settings()
        found = knowledge.evaluate(sys.stdout, docs, data, half=half, database_url=database_url)
        return run(found, loaded)

    return knowledge_group
