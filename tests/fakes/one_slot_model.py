"""The embedded model as the bot meets it, for whole flows: a decide-first model whose
server answers one request at a time, in arrival order.

Each agent of the tree (`tree`, by name) decides to answer itself and then writes
`Answer n.`; every other request (summaries, their aids, compaction) goes to `summaries`
(a `TranscriptSummarizer`). With `hold_summaries`, a summary
request that reaches the slot stays there, as a long generation would, until `release()`
or until another request queues behind it (a busy server finishes its current request
first). `served` lists, in order, the agent of every request the slot finished;
`cancelled` those whose caller went away while they were in the slot.
"""

from __future__ import annotations

import asyncio
import itertools
import json

from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import DECIDE_FIRST
from agents.summary.agent import SUMMARIZER_NAME
from tests.fakes.transcript_summarizer import TranscriptSummarizer


class OneSlotModel:
    """One request at a time; see the module docstring."""

    name = "one-slot"
    profile = DECIDE_FIRST

    def __init__(
        self,
        summaries: TranscriptSummarizer,
        *,
        tree: tuple[str, ...] = ("support_supervisor", "billing_agent"),
        hold_summaries: bool = False,
    ) -> None:
        self.summaries = summaries
        self.tree = tree
        self.hold_summaries = hold_summaries
        self.served: list[str] = []
        self.cancelled: list[str] = []
        self.summary_in_slot = asyncio.Event()
        self._slot = asyncio.Lock()
        self._queued = 0
        self._released = False
        self._nudge = asyncio.Event()
        self._answers = itertools.count(1)

    def release(self) -> None:
        """Let held summary requests finish, now and from now on."""
        self._released = True
        self._nudge.set()

    async def generate(self, request: LlmRequest) -> LlmResponse:
        self._queued += 1
        self._nudge.set()
        try:
            await self._slot.acquire()
        finally:
            self._queued -= 1
        try:
            if request.agent_name == SUMMARIZER_NAME and self.hold_summaries:
                self.summary_in_slot.set()
                while not (self._released or self._queued):
                    self._nudge.clear()
                    await self._nudge.wait()
            response = await self._answer(request)
        except asyncio.CancelledError:
            self.cancelled.append(request.agent_name)
            raise
        finally:
            self._slot.release()
        self.served.append(request.agent_name)
        return response

    async def _answer(self, request: LlmRequest) -> LlmResponse:
        if request.agent_name not in self.tree:
            return await self.summaries.generate(request)
        if request.response_schema is not None:
            return LlmResponse.from_text(json.dumps(request.agent_name))
        return LlmResponse.from_text(f"Answer {next(self._answers)}.")
