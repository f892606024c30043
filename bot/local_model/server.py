"""The embedded default model: a local llama.cpp server the bot reaches through litellm.

When no hosted model is configured, the bot serves a small instruction-tuned model on the
CPU (see `bot.local_model.weights` for where the weights come from) and talks to it like
any other OpenAI-compatible server, so the same code paths run::

    async with local_model_server() as endpoint:
        model = endpoint.litellm_model()        # LiteLlmModel(tool_mode="prompted")
        tree = build_support_tree(model=model)

The server is a child process (`bot.local_model.serve`) bound to 127.0.0.1 on a free
port. It is started by `LocalModelServer.start()` and stopped by `stop()`; it also
exits by itself if this process dies, because it serves only while its stdin is open.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

from pydantic_settings import BaseSettings, SettingsConfigDict
from tqdm import tqdm

from bot.local_model.weights import (
    QWEN_CODER_1_5B,
    LocalModelError,
    LocalModelSpec,
    ensure_weights,
    find_parts,
)

if TYPE_CHECKING:
    from agents.models.litellm_model import LiteLlmModel

logger = logging.getLogger(__name__)

# llama.cpp ignores the key; litellm's OpenAI client insists on one. It is distinctive so
# that redacting it from error messages cannot mangle ordinary words.
API_KEY = "sk-local-no-key"
STOP_TIMEOUT = 10.0


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/support-bot`, else `~/.cache/support-bot`."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "support-bot"


class LocalModelSettings(BaseSettings):
    """Knobs for the embedded model, from `LOCAL_MODEL_*` environment variables.

    `dir` (LOCAL_MODEL_DIR) holds the assembled GGUF and the server log; `threads` and
    `ctx` size the server (2 threads; 12288 tokens holds the summary agent's default
    6000-token transcript budget, its instruction and a 2048-token record, for ~350 MB of
    KV cache); `load_timeout_seconds` bounds start-up; `timeout_seconds` is the per-call
    timeout given to litellm (a CPU model needs minutes for a long summary).
    """

    model_config = SettingsConfigDict(
        env_prefix="LOCAL_MODEL_", env_file=".env", extra="ignore", frozen=True
    )

    dir: Path = default_cache_dir()
    threads: int = 2
    ctx: int = 12288
    load_timeout_seconds: float = 300.0
    timeout_seconds: float = 600.0


@dataclass(frozen=True)
class LocalEndpoint:
    """How to reach a running local server through litellm."""

    model: str
    api_base: str
    api_key: str = API_KEY
    timeout: float = 600.0

    def litellm_model(self, **overrides: Any) -> LiteLlmModel:
        """A `LiteLlmModel` for this server: tools go out as prompted JSON answers, because
        llama.cpp returns this model's tool calls as text; `response_format` json_schema is
        enforced by the server's grammar. No retries: a local server is up or it is not.
        Its profile (`agents.models.profile`), unless `overrides` change it: no native
        tool calling, so its steps decide first, asked in both decision layouts."""
        from agents.models.litellm_model import LiteLlmModel

        options: dict[str, Any] = {
            "api_base": self.api_base,
            "api_key": self.api_key,
            "timeout": self.timeout,
            "tool_mode": "prompted",
            "max_retries": 1,
            # Its two decision layouts err on different messages; read together they
            # routed routing_dev better than either alone (README, issue 16).
            "decision_layouts": ("question", "functions"),
        }
        options.update(overrides)
        return LiteLlmModel(self.model, **options)


def local_model_available(spec: LocalModelSpec = QWEN_CODER_1_5B) -> bool:
    """Whether the `local` extra is installed: the runtime and every weight part."""
    if importlib.util.find_spec("xllamacpp") is None:
        return False
    try:
        find_parts(spec)
    except LocalModelError:
        return False
    return True


def server_command(
    weights: Path, *, alias: str, threads: int, ctx: int, python: str | None = None
) -> list[str]:
    """The child process's command line; it always binds 127.0.0.1 on a port the OS picks."""
    return [
        python or sys.executable,
        "-m",
        "bot.local_model.serve",
        "--model",
        str(weights),
        "--alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--threads",
        str(threads),
        "--ctx",
        str(ctx),
    ]


def assembly_bar(spec: LocalModelSpec, stream: TextIO) -> tqdm:
    """The progress bar shown while the weights file is assembled from its parts (only
    the first start-up on a machine takes long enough to see it)."""
    return tqdm(
        desc=f"assembling {spec.filename}",
        total=spec.size,
        unit="B",
        unit_scale=True,
        file=stream,
        delay=0.5,  # nothing at all when the file is already there
    )


class LocalModelServer:
    """A managed local model server: assemble the weights if needed, start, wait, stop.

    `command` replaces the server command line (tests use a stand-in that speaks the same
    start-up protocol); `stderr` is where progress is shown.
    """

    def __init__(
        self,
        *,
        settings: LocalModelSettings | None = None,
        spec: LocalModelSpec = QWEN_CODER_1_5B,
        command: list[str] | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.settings = settings or LocalModelSettings()
        self.spec = spec
        self.command = command
        self.stderr = stderr if stderr is not None else sys.stderr
        # One log per bot process: several bots (a chat and an eval, say) may share the dir.
        self.log_path = self.settings.dir / f"local_model_server.{os.getpid()}.log"
        self.endpoint: LocalEndpoint | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._log: IO[bytes] | None = None
        self._failed = False

    async def start(self) -> LocalEndpoint:
        """Start the server and return its endpoint once the model is loaded."""
        if self.endpoint is not None:
            return self.endpoint
        command = self.command or await self._default_command()
        self.settings.dir.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        self._say(f"loading the local model {self.spec.name} ...")
        started = time.monotonic()
        self._process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self._log,
            # Its own session: a Ctrl-C in the terminal reaches the bot, which stops it.
            start_new_session=True,
        )
        try:
            address = await self._wait_until_listening(started)
        except BaseException:
            self._failed = True
            await self.stop()
            raise
        self._say(f"local model ready in {time.monotonic() - started:.1f}s at {address}")
        self.endpoint = LocalEndpoint(
            model=f"openai/{self.spec.alias}",
            api_base=f"{address.rstrip('/')}/v1",
            timeout=self.settings.timeout_seconds,
        )
        return self.endpoint

    async def stop(self) -> None:
        """Stop the server: close its stdin, then terminate, then kill if it lingers."""
        process, self._process = self._process, None
        self.endpoint = None
        if process is not None and process.returncode is None:
            if process.stdin is not None:
                process.stdin.close()
            for signal_it in (None, process.terminate, process.kill):
                if signal_it is not None:
                    with contextlib.suppress(ProcessLookupError):
                        signal_it()
                try:
                    await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
                    break
                except TimeoutError:
                    continue
        if self._log is not None:
            self._log.close()
            self._log = None
            # Kept only when start-up failed, for the error message that points at it.
            if not self._failed:
                self.log_path.unlink(missing_ok=True)

    async def _default_command(self) -> list[str]:
        with assembly_bar(self.spec, self.stderr) as bar:
            weights = await asyncio.to_thread(
                ensure_weights,
                self.spec,
                self.settings.dir,
                progress=lambda done, _total: bar.update(done - bar.n),
            )
        return server_command(
            weights, alias=self.spec.alias, threads=self.settings.threads, ctx=self.settings.ctx
        )

    async def _wait_until_listening(self, started: float) -> str:
        assert self._process is not None and self._process.stdout is not None
        ticker = asyncio.create_task(self._tick(started))
        try:
            line = await asyncio.wait_for(
                self._process.stdout.readline(), self.settings.load_timeout_seconds
            )
        except TimeoutError:
            raise LocalModelError(
                f"the local model did not load within {self.settings.load_timeout_seconds:.0f}s "
                f"(LOCAL_MODEL_LOAD_TIMEOUT_SECONDS); see {self.log_path}"
            ) from None
        finally:
            ticker.cancel()
        try:
            address = str(json.loads(line)["address"])
        except (ValueError, KeyError, TypeError):
            await asyncio.sleep(0.2)  # let the log catch the child's last words
            raise LocalModelError(
                f"the local model server failed to start: {self._log_tail()} "
                f"(full log: {self.log_path})"
            ) from None
        if not address.startswith("http://127.0.0.1:"):
            raise LocalModelError(f"the local model server listens on {address}, not loopback")
        return address

    async def _tick(self, started: float) -> None:
        """Elapsed seconds while loading, redrawn in place on a terminal."""
        if not getattr(self.stderr, "isatty", lambda: False)():
            return
        while True:
            await asyncio.sleep(1.0)
            self.stderr.write(f"\rloading ... {time.monotonic() - started:.0f}s")
            self.stderr.flush()

    def _log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        tail = [line for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail) or "(no output)"

    def _say(self, message: str) -> None:
        tty = getattr(self.stderr, "isatty", lambda: False)()
        self.stderr.write(("\r\033[K" if tty else "") + message + "\n")
        self.stderr.flush()


@asynccontextmanager
async def local_model_server(
    settings: LocalModelSettings | None = None, **options: Any
) -> AsyncIterator[LocalEndpoint]:
    """Run the embedded model for the duration of the block; yields its `LocalEndpoint`."""
    server = LocalModelServer(settings=settings, **options)
    endpoint = await server.start()
    try:
        yield endpoint
    finally:
        await server.stop()
