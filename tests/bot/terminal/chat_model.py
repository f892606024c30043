"""A scripted support model behind a real OpenAI-compatible HTTP server, for CLI tests.

`FakeOpenAIServer` runs in a background thread with its own event loop, so a test can
start the real `support-bot` process (piped, or in a pseudo-terminal) with
`MODEL=openai/test MODEL_API_BASE=<base_url>` and talk to it synchronously. The
`support_model` responder answers from what each request holds, as a model would:
the supervisor transfers billing talk to `billing_agent`, agents answer in text (billing_agent
searches the knowledge base first about a duplicate charge), and a
summary request (one with a JSON schema) gets a handoff record citing the transcript.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.fakes.openai_server import (
    FakeOpenAIServer,
    Reply,
    json_reply,
    text,
    tool_call,
    tool_call_reply,
)

MAX_REQUESTS = 1000
BILLING_REPLY = "Thanks, billing here. Which refund option would you like?"
# A billing message with these words makes billing_agent search the knowledge base first.
DUPLICATE = "charged twice"
KNOWLEDGE_REPLY = (
    "A duplicate charge is refunded in full to your original payment method within 5 to 10 "
    "business days."
)
_LINE = re.compile(r"^\[(e\d+)\] user: (.*)$", re.MULTILINE)
_ORDER = re.compile(r"\b[A-Z]-\d{4}\b")


def _system(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    return (
        str(messages[0].get("content") or "")
        if messages and messages[0]["role"] == "system"
        else ""
    )


def _last(body: dict[str, Any]) -> dict[str, Any]:
    return (body.get("messages") or [{}])[-1]


def support_model(body: dict[str, Any]) -> Reply:
    """One answer for any request the bot sends (see the module docstring)."""
    if body.get("response_format"):
        return json_reply(handoff_record(str(_last(body).get("content") or "")), usage=(200, 60))
    system = _system(body)
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    if (
        system.startswith("You are the first point of contact")
        and "transfer_to_agent" in tools
        and _last(body)["role"] == "user"
    ):
        return tool_call_reply(tool_call("transfer_to_agent", {"agent_name": "billing_agent"}))
    messages = body.get("messages") or []
    if any(m["role"] == "tool" and '"sections"' in str(m.get("content")) for m in messages):
        return text(KNOWLEDGE_REPLY, usage=(120, 20))
    asked = any(m["role"] == "user" and DUPLICATE in str(m.get("content")) for m in messages)
    if "search_knowledge" in tools and asked:
        return tool_call_reply(tool_call("search_knowledge", {"query": "duplicate charge"}))
    if "billing" in system.lower():
        return text(BILLING_REPLY, usage=(40, 12))
    return text("Hello! How can I help?", usage=(30, 8))


def handoff_record(transcript: str) -> dict[str, Any]:
    """A record every user line of the transcript supports: goal plus one fact each."""
    facts = [
        {"text": line.strip(), "sources": [event_id]}
        for event_id, line in _LINE.findall(transcript)
        if _ORDER.search(line)
    ]
    return {
        "goal": "Resolve the customer's late order",
        "facts": facts,
        "decisions": [],
        "commitments": [],
        "open_questions": [],
    }


@contextmanager
def model_server() -> Iterator[FakeOpenAIServer]:
    """A `FakeOpenAIServer` answering every request with `support_model`, on a thread."""
    loop = asyncio.new_event_loop()
    server = FakeOpenAIServer()
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        ready.set()
        loop.run_forever()

    server.add(*[support_model] * MAX_REQUESTS)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
