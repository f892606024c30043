"""A progress bar on stderr for long command-line runs (evaluations)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """`bar(done, total)` redraws `label [#####.....] done/total elapsed` in place on a
    terminal; elsewhere (a log file, CI) it prints a line at every tenth and at the end."""

    def __init__(self, label: str, *, stream: TextIO | None = None, width: int = 30) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.started = time.monotonic()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_tenth = -1

    def __call__(self, done: int, total: int) -> None:
        fraction = done / total if total else 1.0
        filled = int(self.width * fraction)
        line = (
            f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} "
            f"{time.monotonic() - self.started:.0f}s"
        )
        if self._tty:
            self.stream.write("\r" + line + ("\n" if done >= total else ""))
        else:
            tenth = int(fraction * 10)
            if tenth == self._last_tenth and done < total:
                return
            self._last_tenth = tenth
            self.stream.write(line + "\n")
        self.stream.flush()
