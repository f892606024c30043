"""A dependency-free progress bar on stderr for long command-line work (model assembly,
evaluations)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


def count(done: int, total: int) -> str:
    return f"{done}/{total}"


def megabytes(done: int, total: int) -> str:
    return f"{done / 1e6:,.0f}/{total / 1e6:,.0f} MB"


class ProgressBar:
    """`bar(done, total)`: on a terminal, redraws `label [####----] 40% detail` in place; in a
    log or CI, prints `label: N%` at every `1/steps` of the way. Either way it ends with
    `label: done in Xs`. `detail` formats the amounts (a count, or megabytes)."""

    def __init__(
        self,
        label: str,
        *,
        stream: TextIO | None = None,
        width: int = 30,
        steps: int = 10,
        detail: Callable[[int, int], str] = count,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.steps = steps
        self.detail = detail
        self.started = time.monotonic()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_step = -1
        self._finished = False

    def __call__(self, done: int, total: int) -> None:
        fraction = done / total if total else 1.0
        if self._tty:
            filled = int(self.width * fraction)
            bar = "#" * filled + "-" * (self.width - filled)
            self.stream.write(f"\r{self.label} [{bar}] {fraction:4.0%} {self.detail(done, total)}")
        elif int(fraction * self.steps) > self._last_step:
            self._last_step = int(fraction * self.steps)
            self.stream.write(f"{self.label}: {self._last_step * 100 // self.steps}%\n")
        if done >= total and not self._finished:
            self._finished = True
            elapsed = time.monotonic() - self.started
            self.stream.write(
                ("\n" if self._tty else "") + f"{self.label}: done in {elapsed:.1f}s\n"
            )
        self.stream.flush()
