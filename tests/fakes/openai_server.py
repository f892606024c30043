"""A local OpenAI-compatible chat server that plays scripted replies over real HTTP.

Use it wherever a test needs a model behind litellm without reaching a hosted API:

    async with FakeOpenAIServer() as server:
        server.add(text("hello"), tool_call_reply(tool_call("lookup", {"id": 1})))
        model = LiteLlmModel("openai/test", api_base=server.base_url, api_key="sk-test")
        ...
        assert server.bodies[0]["messages"][0]["role"] == "system"
        server.assert_complete()

Every request to `POST /v1/chat/completions` is recorded (`requests`, `bodies`) and
answered with the next scripted `Reply`: a text or tool-call completion, an HTTP error
(say 500, or 429 with `Retry-After`), or anything else built with `Reply(...)`. A step
may also be a callable that receives the request body and returns a `Reply`, for answers
that depend on the input. Any step can be delayed to provoke client timeouts. A request
with `"stream": true` gets the same completion as server-sent events, its text in deltas
of `stream_chunk_chars`. A request
with no step left gets a 400 naming the problem, and `assert_complete()` fails on it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer: status, JSON body, headers, and a delay before sending."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    # Streamed, the answer hangs after this many chunks (a model that dies mid-reply).
    stall_after: int | None = None

    def delayed(self, seconds: float) -> Reply:
        """The same reply, sent after `seconds` (use it to provoke client timeouts)."""
        return replace(self, delay=seconds)

    def stalled(self, chunks: int) -> Reply:
        """The same reply that, streamed, stops after `chunks` chunks and hangs."""
        return replace(self, stall_after=chunks)


Step = Reply | Callable[[dict[str, Any]], Reply]


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received: path, headers, parsed JSON body, arrival time."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float


def tool_call(name: str, args: dict[str, Any] | str, *, id: str | None = None) -> dict[str, Any]:
    """One OpenAI tool call. Pass `args` as a string to send malformed JSON on purpose."""
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {
        "id": id or "call_" + uuid.uuid4().hex[:12],
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def completion(
    message: dict[str, Any],
    *,
    finish_reason: str = "stop",
    usage: tuple[int, int] = (10, 5),
    model: str | None = None,
) -> Reply:
    """A 200 chat completion holding `message`; `usage` is (prompt, completion) tokens.

    `model` defaults to the model named in the request.
    """
    prompt_tokens, completion_tokens = usage
    return Reply(
        body={
            "id": "chatcmpl-" + uuid.uuid4().hex[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def text(content: str, *, finish_reason: str = "stop", usage: tuple[int, int] = (10, 5)) -> Reply:
    """An assistant text answer."""
    return completion(
        {"role": "assistant", "content": content}, finish_reason=finish_reason, usage=usage
    )


def json_reply(value: Any, *, usage: tuple[int, int] = (10, 5)) -> Reply:
    """An assistant text answer holding `value` serialised as JSON."""
    return text(json.dumps(value), usage=usage)


def tool_call_reply(
    *calls: dict[str, Any], content: str | None = None, usage: tuple[int, int] = (10, 5)
) -> Reply:
    """An assistant answer with `tool_calls` (build each with `tool_call`)."""
    message = {"role": "assistant", "content": content, "tool_calls": list(calls)}
    return completion(message, finish_reason="tool_calls", usage=usage)


def error(
    status: int,
    message: str = "scripted failure",
    *,
    headers: dict[str, str] | None = None,
    error_type: str = "server_error",
) -> Reply:
    """An OpenAI-style error answer: `error(500)`, `error(429, headers={"Retry-After": "1"})`."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": None}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


class FakeOpenAIServer:
    """An aiohttp server on 127.0.0.1 (random port) speaking the chat-completions API.

    Start it with `async with FakeOpenAIServer() as server` or `await server.start()` /
    `await server.close()`. Point clients at `base_url` (it ends in `/v1`).
    """

    def __init__(self, replies: Iterable[Step] = (), *, stream_chunk_chars: int = 5) -> None:
        self._steps: deque[Step] = deque(replies)
        self.stream_chunk_chars = stream_chunk_chars
        self.requests: list[RecordedRequest] = []
        self.unexpected: list[RecordedRequest] = []
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self.port = 0

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, `http://127.0.0.1:PORT/v1`."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of all chat-completion requests received, in order."""
        return [r.body for r in self.requests]

    @property
    def remaining(self) -> int:
        """How many scripted steps are still queued."""
        return len(self._steps)

    def add(self, *steps: Step) -> FakeOpenAIServer:
        """Queue replies (or callables of the request body returning a reply)."""
        self._steps.extend(steps)
        return self

    def assert_complete(self) -> None:
        """Fail if a step was never used or a request came in with no step left."""
        if self.unexpected:
            raise AssertionError(f"{len(self.unexpected)} unexpected requests to the fake server")
        if self._steps:
            raise AssertionError(f"{len(self._steps)} scripted replies were never requested")

    async def start(self) -> FakeOpenAIServer:
        """Listen on 127.0.0.1 on a free port."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        # A short shutdown timeout: delayed replies must not hold up a test's teardown.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        sockets = self._runner.addresses
        self.port = int(sockets[0][1])
        return self

    async def close(self) -> None:
        """Stop listening; pending delayed replies are abandoned."""
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAIServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _chat(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return web.json_response(error(400, "body is not JSON").body, status=400)
        recorded = RecordedRequest(
            path=request.path,
            headers=dict(request.headers),
            body=body,
            received_at=time.monotonic(),
        )
        self.requests.append(recorded)
        if not self._steps:
            self.unexpected.append(recorded)
            message = f"FakeOpenAIServer: unexpected request #{len(self.requests)}, no reply left"
            return web.json_response(error(400, message).body, status=400)
        step = self._steps.popleft()
        reply = step if isinstance(step, Reply) else step(body)
        if reply.delay:
            try:
                await asyncio.wait_for(self._closing.wait(), timeout=reply.delay)
            except TimeoutError:
                pass
        response_body = reply.body
        if "choices" in response_body and not response_body.get("model"):
            # Echo the requested model, as real servers do, so litellm can price the call.
            response_body = {**response_body, "model": body.get("model", "test")}
        choices = response_body.get("choices")
        whole = isinstance(choices, list) and bool(choices) and isinstance(choices[0], dict)
        if body.get("stream") and reply.status == 200 and whole:
            return await self._stream(request, response_body, reply.stall_after)
        return web.json_response(response_body, status=reply.status, headers=reply.headers)

    async def _stream(
        self, request: web.Request, completion: dict[str, Any], stall_after: int | None
    ) -> web.StreamResponse:
        """`completion` as OpenAI's server-sent events: the text in deltas of
        `stream_chunk_chars`, tool calls whole, then the finish reason and the usage."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        choice = completion["choices"][0]
        message = choice.get("message") or {}
        text = message.get("content") or ""
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        size = self.stream_chunk_chars
        deltas += [{"content": text[i : i + size]} for i in range(0, len(text), size)]
        if message.get("tool_calls"):
            calls = [{**c, "index": n} for n, c in enumerate(message["tool_calls"])]
            deltas.append({"tool_calls": calls})
        base = {k: completion[k] for k in ("id", "created", "model") if k in completion}
        base["object"] = "chat.completion.chunk"
        finishes = [None] * len(deltas) + [choice.get("finish_reason", "stop")]
        chunks = [
            {**base, "choices": [{"index": 0, "delta": d, "finish_reason": f}]}
            for d, f in zip([*deltas, {}], finishes, strict=True)
        ]
        if completion.get("usage"):
            chunks.append({**base, "choices": [], "usage": completion["usage"]})
        try:
            await response.prepare(request)
            for n, chunk in enumerate(chunks):
                if n == stall_after:
                    await self._closing.wait()
                    return response
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client gave up (a timeout under test)
        return response

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "test", "object": "model"}]})
