"""The real `support-bot` process: piped, and typed at in a pseudo-terminal.

The model is `openai/test` behind a local OpenAI-compatible server (`chat_model`), so
every reply goes through litellm exactly as a hosted model's would.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.terminal.chat_model import BILLING_REPLY, KNOWLEDGE_REPLY, model_server
from tests.fakes.openai_server import FakeOpenAIServer

BIN = Path(sys.executable).with_name("support-bot")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with model_server() as running:
        yield running


def chat_env(server: FakeOpenAIServer, db: Path) -> dict[str, str]:
    """No Slack credentials; the scripted model; a fresh SQLite file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "MODEL"))}
    env.update(
        MODEL="openai/test",
        MODEL_API_BASE=server.base_url,
        DATABASE_URL=f"sqlite+aiosqlite:///{db}",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LOG_LEVEL="INFO",
        HOME=str(db.parent),
    )
    return env


def piped(env: dict[str, str], lines: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), "chat", "--user", "pat"],
        input=lines,
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
    )


def test_chat_piped_session_transfers_summarises_and_resumes(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    env = chat_env(server, tmp_path / "chat.db")
    first = piped(env, "my order A-1001 is late\n/summary\n")
    assert first.returncode == 0, first.stderr[-2000:]
    # stdout holds replies and results only: no prompt, banner or log line.
    assert first.stdout.splitlines() == [
        "support_supervisor → billing_agent",
        f"[billing_agent] {BILLING_REPLY}",
        first.stdout.splitlines()[2],
        "Goal: Resolve the customer's late order",
        "Facts:",
        "- [user claim, unverified] my order A-1001 is late (e1)",
    ]
    assert first.stdout.splitlines()[2].startswith("Handoff summary of session local-")
    logged = [json.loads(line) for line in first.stderr.splitlines() if line.startswith("{")]
    invocations = [r for r in logged if r.get("msg") == "invocation"]
    assert invocations[0]["transfers"] == ["support_supervisor->billing_agent"]
    assert invocations[0]["agents"] == ["support_supervisor", "billing_agent"]
    assert invocations[0]["invocation_id"].startswith("inv-")
    assert invocations[0]["outcome"] == "completed"

    # A restart resumes the thread: billing_agent owns it, so no transfer this time.
    second = piped(env, "/threads\nany update?\n")
    assert second.returncode == 0, second.stderr[-2000:]
    lines = second.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("*  1  ") and "active" in lines[0] and "billing_agent" in lines[0]
    assert lines[1] == f"[billing_agent] {BILLING_REPLY}"


def test_chat_piped_reply_from_the_knowledge_base_prints_its_sources(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    env = chat_env(server, tmp_path / "chat.db")
    done = piped(env, "I was charged twice for invoice INV-2291, can I get a refund?\n")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "support_supervisor → billing_agent",
        f"[billing_agent] {KNOWLEDGE_REPLY}",
        "Sources:",
    ]
    assert (
        "  - Refund policy (sample) › Duplicate charges <https://help.example.com/policies/refunds>"
        in lines[3:]
    )


def test_chat_piped_handoff_to_agent_and_person(server: FakeOpenAIServer, tmp_path: Path) -> None:
    env = chat_env(server, tmp_path / "chat.db")
    done = piped(
        env,
        "my order A-1001 is late\n/handoff billing_agent\n/handoff tech_support\n"
        "/handoff Alex\n/threads\n/quit\nnever read\n",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "Handed off to billing_agent, in a new session that starts from:" in out
    assert "tech_support can't own a thread; hand off to one of:" in out
    assert "Handed off to Alex." in out
    assert "handed_off" in out.splitlines()[-1]
    assert "never read" not in out and out.count("[billing_agent]") == 1


def read_until(fd: int, needle: bytes, seen: bytearray, timeout: float = 60.0) -> bytes:
    """Read the terminal until `needle` appears after what was already consumed."""
    deadline = time.monotonic() + timeout
    start = len(seen)
    while needle not in seen[start:]:
        left = deadline - time.monotonic()
        assert left > 0, f"no {needle!r} in {bytes(seen[start:])[-500:]!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            assert chunk, f"terminal closed before {needle!r}: {bytes(seen[start:])!r}"
            seen.extend(chunk)
    return bytes(seen[start:])


def test_chat_no_credentials_reaches_prompt_in_a_terminal(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """`make run` without credentials runs `support-bot`: it lands at the chat prompt,
    and a person can type at it."""
    env = chat_env(server, tmp_path / "chat.db")
    controller, terminal = pty.openpty()
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [str(BIN)], stdin=terminal, stdout=terminal, stderr=stderr, env=env, close_fds=True
        )
    os.close(terminal)
    seen = bytearray()
    try:
        banner = read_until(controller, b"you> ", seen)
        assert b"New thread. /help lists the commands." in banner
        # litellm is imported in the background while the person reads the prompt.
        deadline = time.monotonic() + 60
        while b"litellm preloaded" not in stderr_path.read_bytes():
            assert time.monotonic() < deadline, "litellm was not preloaded"
            time.sleep(0.05)
        for char in "my order A-1001 is late":
            os.write(controller, char.encode())
        os.write(controller, b"\r")
        reply = read_until(controller, b"you> ", seen)
        assert b"support_supervisor \xe2\x86\x92 billing_agent" in reply
        assert f"[billing_agent] {BILLING_REPLY}".encode() in reply
        os.write(controller, b"/summary\r")
        summary = read_until(controller, b"you> ", seen)
        assert b"- [user claim, unverified] my order A-1001 is late (e1)" in summary
        os.write(controller, b"/quit\r")
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    logged = stderr_path.read_text()
    # litellm was loaded before the first message's invocation ended (its one INFO line).
    assert logged.index("litellm preloaded") < logged.index('"msg": "invocation"')
