"""Reading the terminal chat's lines without blocking the event loop, or its exit.

Lines are read in a daemon thread (`input()` with readline editing at a terminal,
`readline()` from a pipe), one line per `read()`, so the prompt appears only after the
previous reply is printed. A daemon thread, not the loop's default executor: a blocked
`input()` must not keep the process alive after Ctrl-C or `/quit`.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sys
import threading
from typing import TextIO


class LineReader:
    """`await read()` returns the next line without its newline, or None at end of input."""

    def __init__(self, *, prompt: str, interactive: bool, stdin: TextIO | None = None) -> None:
        self.prompt = prompt
        self.interactive = interactive
        self.stdin = stdin or sys.stdin
        self._wanted: queue.Queue[tuple[asyncio.AbstractEventLoop, asyncio.Future[str | None]]]
        self._wanted = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="chat-input", daemon=True)
        self._thread.start()
        if interactive:
            with contextlib.suppress(ImportError):
                import readline  # noqa: F401  (line editing and history for input())

    async def read(self) -> str | None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str | None] = loop.create_future()
        self._wanted.put((loop, future))
        return await future

    def _serve(self) -> None:
        while True:
            loop, future = self._wanted.get()
            line = self._read_one()
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(_resolve, future, line)

    def _read_one(self) -> str | None:
        try:
            if self.interactive:
                return input(self.prompt)
            raw = self.stdin.readline()
        except (EOFError, KeyboardInterrupt, OSError, ValueError):
            return None
        return raw.rstrip("\r\n") if raw else None


def _resolve(future: asyncio.Future[str | None], line: str | None) -> None:
    if not future.done():
        future.set_result(line)
