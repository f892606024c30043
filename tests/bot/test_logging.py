"""Structured logs: one JSON object per line, one line per invocation at INFO (one per
event at DEBUG), no credential ever; a command at a terminal shows its output, not the log."""

from __future__ import annotations

import json
import logging
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.llm.agent import LlmAgent
from agents.models.litellm_model import LiteLlmModel
from agents.runner import Runner
from agents.sessions.service import InMemorySessionService
from bot.config import Settings
from bot.logging import configure_logging, redact
from tests.fakes.openai_server import FakeOpenAIServer, error, text, tool_call, tool_call_reply

SLACK_TOKEN = "xoxb-1111-2222-s3cr3tslack"
API_KEY = "sk-live-0123456789abcdef"


def records(err: str) -> list[dict[str, object]]:
    lines = [line for line in err.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # every line is one JSON object


def test_logging_never_shows_tokens_from_settings_or_headers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("INFO")
    settings = Settings(_env_file=None, slack_bot_token=SLACK_TOKEN, model_api_key=API_KEY)
    log = logging.getLogger("test.secrets")
    log.info("settings: %s", settings, extra={"settings": settings})
    log.info("calling", extra={"headers": {"Authorization": f"Bearer {API_KEY}"}})
    log.info("raw header", extra={"authorization": API_KEY, "api_key": API_KEY})
    log.warning("failed: Authorization: Bearer %s token=%s", API_KEY, SLACK_TOKEN)
    err = capsys.readouterr().err
    assert SLACK_TOKEN not in err and API_KEY not in err
    logged = records(err)
    assert len(logged) == 4
    assert logged[1]["headers"] == {"Authorization": "[redacted]"}
    assert logged[2]["authorization"] == "[redacted]" and logged[2]["api_key"] == "[redacted]"


async def run_transfer_conversation() -> None:
    """A hand-off to billing, a model error retried, then billing's answer."""
    async with FakeOpenAIServer() as server:
        server.add(
            tool_call_reply(tool_call("transfer_to_agent", {"agent_name": "billing_agent"})),
            error(500, f"upstream rejected key {API_KEY}"),
            text("Refund on its way."),
        )
        model = LiteLlmModel(
            "openai/test", api_base=server.base_url, api_key=API_KEY, backoff_base=0.01
        )
        billing = LlmAgent(name="billing_agent", description="Billing.", model=model)
        root = LlmAgent(
            name="support_supervisor", description="Door.", model=model, sub_agents=[billing]
        )
        sessions = InMemorySessionService()
        runner = Runner(agent=root, app_name="t", session_service=sessions)
        session = await sessions.create_session(app_name="t", user_id="u")
        async for _ in runner.run_async(user_id="u", session_id=session.id, message="refund?"):
            pass


async def test_logging_one_line_per_invocation_with_its_path(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("INFO")
    await run_transfer_conversation()
    err = capsys.readouterr().err
    assert API_KEY not in err
    logged = records(err)
    assert not [r for r in logged if r.get("msg") == "event"]  # per-event lines are DEBUG
    [line] = [r for r in logged if r.get("msg") == "invocation"]
    assert line["logger"] == "agents.invocations" and line["level"] == "info"
    assert str(line["invocation_id"]).startswith("inv-") and line["session_id"]
    assert line["outcome"] == "completed"
    assert line["events"] == ["e1", "e2", "e3", "e4"]
    assert line["agents"] == ["support_supervisor", "billing_agent"]
    assert line["transfers"] == ["support_supervisor->billing_agent"]
    assert line["tools"] == ["transfer_to_agent"]
    assert line["error_code"] is None
    assert isinstance(line["ms"], float) and line["ms"] >= 0


async def test_logging_one_json_line_per_event_at_debug(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("DEBUG")
    try:
        await run_transfer_conversation()
    finally:
        configure_logging("INFO")
    err = capsys.readouterr().err
    assert API_KEY not in err
    events = [r for r in records(err) if r.get("msg") == "event"]
    assert [(e["author"], e["transfer_to"]) for e in events] == [
        ("user", None),
        ("support_supervisor", None),  # the transfer_to_agent call
        ("support_supervisor", "billing_agent"),  # its response, carrying the transfer
        ("billing_agent", None),
    ]
    assert {e["invocation_id"] for e in events} == {events[0]["invocation_id"]}
    assert all("branch" in e for e in events)
    assert events[1]["tools"] == ["transfer_to_agent"]
    [line] = [r for r in records(err) if r.get("msg") == "invocation"]
    assert line["events"] == [e["event_id"] for e in events]


def long_body(letters: int) -> str:
    """A body shaped as the one that made masking quadratic: a long run of letters, a
    URL with a password, and many scheme-like fragments."""
    return "a" * letters + " postgresql://user:pw@db/x " + "b://c:" * (letters // 10)


def test_logging_masks_the_password_in_a_long_body() -> None:
    # A signed body is logged when Bolt matches no listener.
    masked = redact(long_body(5_000))
    assert "postgresql://user:[redacted]@db/x" in masked
    assert "pw" not in masked


@pytest.mark.timing
def test_logging_masks_a_long_body_in_linear_time() -> None:
    # Masking once took time quadratic in the body's length (a second for a few kilobytes
    # of letters, so hours for this one); linear, it takes milliseconds.
    started = time.perf_counter()
    masked = redact(long_body(200_000))
    assert time.perf_counter() - started < 10.0
    assert "postgresql://user:[redacted]@db/x" in masked


def test_logging_masks_basic_authorization(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("INFO")
    credential = "c3VwcG9ydDpodW50ZXIy"  # support:hunter2
    log = logging.getLogger("test.basic")
    log.warning("proxy refused: Authorization: Basic %s", credential)
    log.info("request", extra={"header": f"Basic {credential}"})
    err = capsys.readouterr().err
    logged = records(err)
    assert credential not in err
    assert logged[0]["msg"] == "proxy refused: Authorization: Basic [redacted]"
    assert logged[1]["header"] == "Basic [redacted]"


CHILD_TIMEOUT_S = 120


def _knowledge_sync(tmp_path: Path, *, terminal: bool, **env: str) -> tuple[str, str]:
    """`support-bot knowledge sync` in a child process, its stderr a terminal (a pty) or a
    pipe: (stdout, stderr)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("LOG_LEVEL", "KNOWLEDGE_DIR")}
    environ |= {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'kb.db'}", **env}
    command = [sys.executable, "-c", "from bot.cli import main; raise SystemExit(main())"]
    if not terminal:
        done = subprocess.run(
            [*command, "knowledge", "sync"],
            capture_output=True,
            text=True,
            env=environ,
            timeout=CHILD_TIMEOUT_S,
        )
        return done.stdout, done.stderr
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [*command, "knowledge", "sync"], stdout=subprocess.PIPE, stderr=follower, env=environ
    ) as child:
        os.close(follower)
        err = b""
        deadline = time.monotonic() + CHILD_TIMEOUT_S
        while True:
            ready, _, _ = select.select([leader], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                child.kill()
                raise AssertionError(f"knowledge sync did not finish: {err.decode()}")
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            err += chunk
        out = child.stdout.read() if child.stdout else b""
    os.close(leader)
    return out.decode(), err.decode()


def test_a_command_at_a_terminal_shows_its_output_not_the_log(tmp_path: Path) -> None:
    out, err = _knowledge_sync(tmp_path, terminal=True)
    assert "4 added" in out
    assert '"level": "info"' not in err  # the migrations' log lines stay off the screen
    # Asked for, the log is there; and a pipe (a service manager, CI) gets it anyway.
    (tmp_path / "asked").mkdir()
    (tmp_path / "piped").mkdir()
    asked_out, asked = _knowledge_sync(tmp_path / "asked", terminal=True, LOG_LEVEL="INFO")
    piped_out, piped = _knowledge_sync(tmp_path / "piped", terminal=False)
    assert "4 added" in asked_out and "4 added" in piped_out
    assert '"level": "info"' in asked and '"level": "info"' in piped
