"""Start-up to ready for `support-bot chat`, and what the first reply costs.

Runs the real `support-bot` in a pseudo-terminal (MODEL=openai/test against a local
scripted OpenAI-compatible server, a fresh SQLite file each run) and measures, from the
moment the process is spawned:

- ready: the chat prompt appears;
- litellm preloaded: the background import finishes (its log line on stderr);
- first reply typed after the preload: time from Enter to the reply (what a person
  sees: the import is off the reply path);
- first reply typed at once: Enter pressed as soon as the prompt shows (the reply has
  to wait for whatever is left of the import), for comparison;
- `import litellm` alone in a fresh interpreter.

    .venv/bin/python bench/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.bot.terminal.chat_model import model_server

BIN = Path(sys.executable).with_name("support-bot")
PROMPT = b"you> "


def read_until(fd: int, needle: bytes, buffer: bytearray, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    start = len(buffer)
    while needle not in buffer[start:]:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError(f"no {needle!r}")
        buffer.extend(os.read(fd, 4096))


def one_run(base_url: str, *, wait_for_preload: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "MODEL"))}
        env.update(
            MODEL="openai/test",
            MODEL_API_BASE=base_url,
            DATABASE_URL=f"sqlite+aiosqlite:///{tmp}/bench.db",
            LOG_LEVEL="INFO",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
        )
        controller, terminal = pty.openpty()
        err_path = Path(tmp) / "stderr"
        with err_path.open("wb") as err:
            spawned = time.perf_counter()
            process = subprocess.Popen(
                [str(BIN), "chat"], stdin=terminal, stdout=terminal, stderr=err, env=env
            )
        os.close(terminal)
        buffer = bytearray()
        figures: dict[str, float] = {}
        try:
            read_until(controller, PROMPT, buffer)
            figures["ready"] = time.perf_counter() - spawned
            if wait_for_preload:
                while b"litellm preloaded" not in err_path.read_bytes():
                    time.sleep(0.01)
                figures["preloaded"] = time.perf_counter() - spawned
            os.write(controller, b"my order A-1001 is late\r")
            sent = time.perf_counter()
            read_until(controller, b"[billing_agent]", buffer)
            figures["reply"] = time.perf_counter() - sent
            os.write(controller, b"/quit\r")
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
            os.close(controller)
        return figures


def import_litellm_seconds() -> float:
    code = "import time; t = time.perf_counter(); import litellm; print(time.perf_counter() - t)"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with model_server() as server:
        after = [one_run(server.base_url, wait_for_preload=True) for _ in range(runs)]
        at_once = [one_run(server.base_url, wait_for_preload=False) for _ in range(runs)]
    imports = [import_litellm_seconds() for _ in range(runs)]

    def median(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    print(f"support-bot chat start-up, median of {runs} runs (seconds from process spawn)")
    print(f"  ready (prompt shown):                     {median(after + at_once, 'ready'):.2f}")
    print(f"  litellm preloaded in the background:      {median(after, 'preloaded'):.2f}")
    print(f"  import litellm alone (fresh interpreter): {statistics.median(imports):.2f}")
    print("first reply (Enter -> reply, 4 model calls over HTTP incl. transfer)")
    print(f"  typed after the preload finished:         {median(after, 'reply'):.3f}")
    print(f"  typed the moment the prompt appeared:     {median(at_once, 'reply'):.3f}")


if __name__ == "__main__":
    main()
