"""Prompt tokens per turn over a 120-turn support conversation, with and without compaction.

The conversation is real: user and agent turns from `../shared/data/transcripts.jsonl`
(MIT-licensed STAR and tau-bench data), played through the support tree with a scripted
model that answers with the dataset's agent turns. The compaction summariser is a
scripted model whose summary is bounded (the last 800 characters of its window), like a
real summariser's token cap. Tokens are counted with litellm's token counter on the
exact OpenAI messages the model would receive. Also prints the latency the compaction
hook adds on the reply path (it runs in the background, so this must be under 1 ms).

    .venv/bin/python bench/compaction_tokens.py [--turns 120] [--data PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agents import InMemorySessionService, Runner
from agents.compaction import Compactor, EventsCompactionConfig, LlmEventSummarizer
from agents.events import FunctionCall, Part
from agents.models.base import LlmRequest, LlmResponse
from agents.models.openai_format import to_openai_messages
from agents.models.profile import ModelProfile
from agents.tree import build_support_tree

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts.jsonl"


def dialogue(path: Path, turns: int) -> list[tuple[str, str]]:
    """(user text, agent reply) pairs, taken in file order across conversations."""
    pairs: list[tuple[str, str]] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            events = json.loads(line)["events"]
            for first, second in itertools.pairwise(events):
                if first["author"] == "user" and second["author"] == "agent":
                    pairs.append((first["text"], second["text"]))
                    if len(pairs) == turns:
                        return pairs
    return pairs


class DialogueModel:
    """The supervisor transfers to billing once; billing answers with the dataset's turns."""

    name = "scripted"
    profile = ModelProfile()

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.prompt_tokens: list[int] = []

    async def generate(self, request: LlmRequest) -> LlmResponse:
        from litellm import token_counter

        tokens = token_counter(model="gpt-4o-mini", messages=to_openai_messages(request))
        if request.agent_name == "billing_agent":
            self.prompt_tokens.append(tokens)
            return LlmResponse.from_text(self.replies[len(self.prompt_tokens) - 1])
        call = FunctionCall(name="transfer_to_agent", args={"agent_name": "billing_agent"})
        return LlmResponse(parts=(Part(function_call=call),))


class BoundedSummaryModel:
    """A summariser stand-in: its summary is the tail of the window, capped like max_tokens."""

    name = "scripted-summary"
    profile = ModelProfile()

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    async def generate(self, request: LlmRequest) -> LlmResponse:
        await asyncio.sleep(self.delay)
        text = request.contents[-1].text
        return LlmResponse.from_text(text[-800:])


async def play(
    pairs: list[tuple[str, str]], *, compact: bool, summary_delay: float = 0.0
) -> tuple[list[int], list[float]]:
    service = InMemorySessionService()
    model = DialogueModel([reply for _, reply in pairs])
    hooks = []
    if compact:
        summarizer = LlmEventSummarizer(BoundedSummaryModel(summary_delay))
        hooks.append(Compactor(service, EventsCompactionConfig(summarizer=summarizer)))
    runner = Runner(
        agent=build_support_tree(),
        app_name="bench",
        session_service=service,
        default_model=model,
        after_invocation=hooks,
    )
    session = await service.create_session(app_name="bench", user_id="u")
    reply_path: list[float] = []
    for text, _ in pairs:
        start = time.perf_counter()
        async for _ in runner.run_async(user_id="u", session_id=session.id, message=text):
            pass
        reply_path.append((time.perf_counter() - start) * 1e3)
        await runner.drain()
    return model.prompt_tokens, reply_path


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=120)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    pairs = dialogue(args.data, args.turns)
    with_c, latency_with = await play(pairs, compact=True)
    without, _ = await play(pairs, compact=False)
    print("turn  tokens_with_compaction  tokens_without")
    for turn in range(len(pairs)):
        if turn < 12 or (turn + 1) % 12 == 0:
            print(f"{turn + 1:>4}  {with_c[turn]:>22}  {without[turn]:>14}")
    t12, t_last = with_c[11], with_c[-1]
    print(f"with compaction: turn {len(pairs)} / turn 12 = {t_last / t12:.2f}x (target <= 1.3x)")
    print(
        f"without compaction: turn {len(pairs)} / turn 12 = {without[-1] / without[11]:.2f}x "
        f"(grows linearly: {without[11]} -> {without[len(pairs) // 2 - 1]} -> {without[-1]})"
    )
    _, latency_slow = await play(pairs, compact=True, summary_delay=0.5)
    fast, slow = statistics.median(latency_with), statistics.median(latency_slow)
    print(
        f"reply path: median {fast:.2f} ms with an instant summariser, {slow:.2f} ms with one "
        f"that takes 500 ms: compaction adds {slow - fast:+.3f} ms to the reply (target < 1 ms)"
    )


if __name__ == "__main__":
    asyncio.run(main())
