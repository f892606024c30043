"""Streaming a reply whose values are checked only once it is complete.

A step whose reply is checked after it is written (`agents.llm.grounding`: an agent with
no knowledge of its own, in a tree with a knowledge base) may still stream, but only its
sentences before the first one that states a checkable value (`agents.knowledge.values`):
those the check can never take back, since it strips sentences with unsupported values
or replaces the reply. From that sentence on nothing more streams; the checked reply is
the step's complete event.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agents.knowledge.values import values

TextSink = Callable[[str], None]

# A sentence ends at ".", "!" or "?" before white space, or at a line break.
_END = re.compile(r"[.!?]+(?=\s)|\n")


class ValueGate:
    """A text sink that passes whole sentences on to `sink` until one states a value."""

    def __init__(self, sink: TextSink) -> None:
        self.sink = sink
        self.pending = ""
        self.closed = False

    def __call__(self, delta: str) -> None:
        if self.closed:
            return
        self.pending += delta
        ends = list(_END.finditer(self.pending))
        if not ends:
            return
        cut = ends[-1].end()
        ready, self.pending = self.pending[:cut], self.pending[cut:]
        start = 0
        for end in ends:
            if values(ready[start : end.end()]):
                self.closed = True
                if start:
                    self.sink(ready[:start])
                return
            start = end.end()
        self.sink(ready)
