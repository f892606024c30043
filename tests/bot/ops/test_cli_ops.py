"""Operator commands on a real SQLite file and a scripted model behind litellm."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agents.metrics import REGISTRY
from bot import cli
from bot.config import Settings
from bot.evals.cli import eval_routing, eval_summaries
from bot.evals.routing import RouteMap
from bot.ops.commands import digest_once, forget, show_stats
from bot.ops.stats import stats_rows
from storage.database import Database
from storage.stats import Stats
from tests.bot.terminal.chat_model import support_model
from tests.fakes.openai_server import FakeOpenAIServer


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer([support_model] * 200) as running:
        yield running


def settings_for(tmp_path: Path, server: FakeOpenAIServer, **extra: object) -> Settings:
    values: dict[str, object] = {
        "database_url": f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        "model": "openai/test",
        "model_api_base": server.base_url,
        **extra,
    }
    return Settings(_env_file=None, **values)  # type: ignore[arg-type,call-arg]


async def chat_turns(settings: Settings, user: str, *lines: str) -> None:
    """Talk to the bot the way `support-bot chat` does."""
    from bot.terminal.chat import run_chat

    stdin = io.StringIO("".join(f"{line}\n" for line in lines))
    await run_chat(settings, user_id=user, interactive=False, out=io.StringIO(), stdin=stdin)


# `incremental` (the default): /summary wrote the thread's window record; the digest found
# nothing new. `whole`: /summary, then the digest, each summarise the thread.
@pytest.mark.parametrize(("mode", "summaries"), [(None, "1"), ("whole", "2")])
async def test_stats_reports_stored_usage_transfers_summaries_and_digests(
    tmp_path: Path, server: FakeOpenAIServer, mode: str | None, summaries: str
) -> None:
    chosen = {} if mode is None else {"summary_mode": mode}
    settings = settings_for(tmp_path, server, idle_after_seconds=0, **chosen)
    await chat_turns(settings, "pat", "my order A-1001 is late", "/summary")
    out = io.StringIO()
    assert await digest_once(settings, out) == 0
    assert out.getvalue().splitlines()[-1] == (
        "1 threads: 1 stored (no lead channel or Slack token: stored only)"
    )
    assert out.getvalue().startswith("stored         terminal/")

    out = io.StringIO()
    await show_stats(settings, out)
    table = dict(
        (name.strip(), value)
        for name, value in (line.rsplit("  ", 1) for line in out.getvalue().splitlines()[2:])
    )
    assert table["invocations (user messages)"].strip() == "1"
    assert table["model calls [support_supervisor]"].strip() == "1 calls, 10+5 tokens, $0.000000"
    assert table["model calls [billing_agent]"].strip().startswith("1 calls, 40+12 tokens")
    assert table["transfers support_supervisor → billing_agent"].strip() == "1"
    assert table["summaries"].strip() == summaries
    assert table["summary first-attempt pass rate"].strip() == "100.0%"
    assert table["digests stored"].strip() == "1"
    assert table["digests posted"].strip() == "0"
    # What each consumer received: the /summary answer and the digest, one each.
    for surface in ("summary", "digest"):
        delivered = table[f"summaries delivered [{surface}]"].strip()
        assert delivered == "1, fallback 0.0%, partial 0.0%"


async def test_forget_deletes_a_users_rows_and_prints_counts(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    settings = settings_for(tmp_path, server)
    await chat_turns(settings, "pat", "my order A-1001 is late")
    await chat_turns(settings, "sam", "my order A-2002 is late")
    out = io.StringIO()
    assert await forget(settings, out, "pat") == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Deleted ") and lines[0].endswith(" rows for user pat:")
    counts = {k: int(v) for k, v in (line.split() for line in lines[1:])}
    assert counts["sessions"] == 1 and counts["threads"] == 1 and counts["events"] == 4
    async with await Database.open(settings.database_url) as db:
        stats = await db.stats.collect()
    assert stats.sessions == 1 and stats.invocations == 1  # sam's remain


def test_db_upgrade_command_migrates_an_empty_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'new.db'}")
    assert cli.main(["db", "upgrade"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sqlite+aiosqlite:///") and " is at revision " in out
    assert (tmp_path / "new.db").exists()


def test_stats_command_prints_a_table_for_an_empty_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")
    assert cli.main(["stats"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Stored (all processes, all time)"
    assert any(line.startswith("summary first-attempt pass rate") for line in out)
    assert [r for r in stats_rows(collect_empty()) if r[0] == "summary fallback rate"] == [
        ("summary fallback rate", "n/a")
    ]


def collect_empty() -> Stats:
    return Stats(summaries={"count": 0})


def write_dataset(path: Path) -> Path:
    rows = [
        {
            "id": f"c{i}",
            "source": "test",
            "expected_route": route,
            "events": [
                {"id": "e1", "author": "agent", "text": "Hello, how can I help?"},
                {"id": "e2", "author": "user", "text": f"my order A-100{i} is late"},
            ],
            "expected_entities": [
                {
                    "type": "order_id",
                    "value": f"A-100{i}",
                    "surfaces": [f"A-100{i}"],
                    "event_ids": ["e2"],
                    "sensitive": False,
                }
            ],
        }
        for i, route in enumerate(["billing", "billing", "booking", "tech_support"])
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


async def test_eval_summaries_reports_recall_and_pass_rates(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    data = write_dataset(tmp_path / "t.jsonl")
    out = io.StringIO()
    settings = settings_for(tmp_path, server, model="openai/unused")
    await eval_summaries(settings, out, data=str(data), model="openai/test", limit=2)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"model: openai/test at {server.base_url}"
    # One line per conversation as it finishes, then the report.
    assert lines[1].startswith("c0: pass-first attempts=1 recall=")
    assert lines[1].endswith("seed=pass")
    assert lines[3] == "[strict] summaries: 2"
    assert "  first-attempt pass rate: 100.0%" in lines
    assert "  high-value entity recall (passing records): 1.000" in lines
    assert all(b["model"] == "test" for b in server.bodies)


async def test_eval_routing_prints_accuracy_and_confusion_table(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    data = write_dataset(tmp_path / "t.jsonl")
    out = io.StringIO()
    await eval_routing(settings_for(tmp_path, server), out, data=str(data))
    lines = out.getvalue().splitlines()
    # The scripted supervisor sends everything to billing: 2 of 4 are right.
    assert lines[1] == (
        "routes: billing=billing_agent, other=support_supervisor, tech_support=tech_support, "
        "anything else=support_supervisor"
    )
    # A line per case as it finishes (a miss with the tree's closest routing examples
    # under it), then the report.
    assert [line.split()[:4] for line in lines[2:8]] == [
        ["ok", "billing_agent", "->", "billing_agent"],
        ["ok", "billing_agent", "->", "billing_agent"],
        ["NO", "support_supervisor", "->", "billing_agent"],
        ["closest", "examples:", *lines[5].split()[2:4]],
        ["NO", "tech_support", "->", "billing_agent"],
        ["closest", "examples:", *lines[7].split()[2:4]],
    ]
    lines = lines[6:]
    assert lines[2] == "routing accuracy: 50.0% (2 of 4)"
    # Each expected agent's accuracy on its own line: a skewed set hides no route.
    assert lines[3:6] == [
        "  billing_agent: 100.0% (2 of 2)",
        "  support_supervisor: 0.0% (0 of 1)",
        "  tech_support: 0.0% (0 of 1)",
    ]
    table = [line.split() for line in lines[7:11]]
    assert table[0] == ["expected", "\\", "answered", "billing_agent", "total", "accuracy"]
    assert table[1:] == [
        ["billing_agent", "2", "2", "100%"],
        ["support_supervisor", "1", "1", "0%"],
        ["tech_support", "1", "1", "0%"],
    ]
    # A hosted model (native tools) answers in one call: no separate decision to time, and
    # no log-probabilities for the examples' vote to weigh against.
    assert lines[12:] == [
        "decisions the examples' vote changed: 0 (0 to the expected agent, 0 away from it); "
        "the model alone: 50.0% (2 of 4)",
        "seconds per routing decision: - (the model answers in one call)",
        "pretend-action replies shown to the user: 0 (caught and replaced: 0)",
        "replies promising a refund: 0, with the policy tool consulted first: 0 "
        "(policy tool consulted in 0 of 4 cases)",
    ]
    assert REGISTRY.get("support_bot_transfers_total") == 4


def test_route_map_parses_overrides_and_fallback() -> None:
    routes = RouteMap.parse("booking=billing_agent,*=tech_support")
    assert routes.agent_for("booking") == "billing_agent"
    assert routes.agent_for("billing") == "billing_agent"
    assert routes.agent_for("general") == "tech_support"
    with pytest.raises(ValueError, match="use route=agent"):
        RouteMap.parse("billing")


def test_digest_without_once_explains_it_only_runs_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["digest"]) == 2
    assert "support-bot digest --once" in capsys.readouterr().err


def test_cli_usage_errors_exit_2_with_one_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["forget"]) == 2
    assert "Missing option '--user'" in capsys.readouterr().err
    assert cli.main(["eval", "routing", "--data", "x.jsonl", "--routes", "nonsense"]) == 2
    assert capsys.readouterr().err.startswith("support-bot: ")


async def test_stats_live_reads_a_metrics_page_with_prometheus_clients_parser(
    tmp_path: Path,
) -> None:
    from aiohttp import web

    REGISTRY.inc("support_bot_transfers_total", **{"from": "support_supervisor", "to": "billing"})
    REGISTRY.inc("support_bot_invocations_total", 3)

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=REGISTRY.exposition(), content_type="text/plain")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 's.db'}")
    out = io.StringIO()
    try:
        await show_stats(settings, out, live_url=f"http://127.0.0.1:{port}/metrics")
    finally:
        await runner.cleanup()
    live = out.getvalue().split("Live counters from ", 1)[1].splitlines()[2:]
    assert sorted(line.split() for line in live) == [
        ["support_bot_invocations_total", "3"],
        ['support_bot_transfers_total{from="support_supervisor",to="billing"}', "1"],
    ]


def test_eval_routing_passes_route_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import bot.evals.cli as eval_cli

    seen: list[dict[str, object]] = []

    async def fake(_settings: object, _out: object, **kwargs: object) -> int:
        seen.append(kwargs)
        return 0

    monkeypatch.setattr(eval_cli, "eval_routing", fake)
    assert cli.main(["eval", "routing", "--data", "x.jsonl", "--route-only"]) == 0
    assert cli.main(["eval", "routing", "--data", "x.jsonl"]) == 0
    assert [s["route_only"] for s in seen] == [True, False]


def test_eval_summaries_passes_the_half(monkeypatch: pytest.MonkeyPatch) -> None:
    import bot.evals.cli as eval_cli

    seen: list[dict[str, object]] = []

    async def fake(_settings: object, _out: object, **kwargs: object) -> int:
        seen.append(kwargs)
        return 0

    monkeypatch.setattr(eval_cli, "eval_summaries", fake)
    assert cli.main(["eval", "summaries", "--data", "x.jsonl", "--half", "look"]) == 0
    assert cli.main(["eval", "summaries", "--data", "x.jsonl"]) == 0
    assert [s["half"] for s in seen] == ["look", None]


async def test_eval_summaries_compares_incremental_and_whole_side_by_side(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    data = write_dataset(tmp_path / "t.jsonl")
    out = io.StringIO()
    settings = settings_for(tmp_path, server, model="openai/unused")
    await eval_summaries(settings, out, data=str(data), model="openai/test", limit=2, mode="both")
    lines = out.getvalue().splitlines()
    assert lines[0] == f"model: openai/test at {server.base_url}; windows of 3 invocations"
    assert [line.split(":")[0] for line in lines[1:5]] == [
        "[incremental] c0",
        "[whole] c0",
        "[whole] c2",  # every nth: 2 of 4 conversations; the modes take turns at going first
        "[incremental] c2",
    ]
    header = lines[5].split()
    assert header[-2:] == ["incremental", "whole"]
    rows = {line[:44].strip(): line[44:].split() for line in lines[6:16]}
    assert rows["threads"] == ["2", "2"]
    assert "window first-attempt pass" in rows and "model seconds at idle (median)" in rows


async def test_eval_summaries_on_one_half_summarises_only_its_threads(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    data = write_dataset(tmp_path / "t.jsonl")
    settings = settings_for(tmp_path, server, model="openai/unused")
    shown = {}
    for half in ("look", "measure"):
        out = io.StringIO()
        await eval_summaries(
            settings, out, data=str(data), model="openai/test", mode="incremental", half=half
        )
        shown[half] = [
            line.split(":")[0].split()[1]
            for line in out.getvalue().splitlines()
            if line.startswith("[incremental] ")
        ]
    assert shown == {"look": ["c0", "c2", "c3"], "measure": ["c1"]}
