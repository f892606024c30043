"""The fake Web API's streamed messages: `chat.startStream`, `chat.appendStream` and
`chat.stopStream`, as strict as Slack.

A stream is a message (in `FakeSlackApi.messages`) with `streaming: True` until it is
stopped. Its `text` is every `markdown_text` appended, in order; `chunks` keeps every
chunk (task updates included); stopping adds the stop's `blocks` and `metadata`.
Refused like Slack: a channel stream without `recipient_user_id` and
`recipient_team_id`, a chunk of an unknown type or without its fields, text over 12,000
characters in one call, appending to or stopping a stream that is not streaming.
Setting `FakeSlackApi.stream_refusal` to an error code makes `chat.startStream` answer
that error (a workspace that does not allow streaming).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.fakes.slack_limits import refusal

if TYPE_CHECKING:
    from tests.fakes.slack_api import FakeSlackApi

MARKDOWN_TEXT = 12_000
TASK_STATUSES = {"pending", "in_progress", "complete", "error"}
STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


def _error(code: str) -> dict[str, Any]:
    return {"ok": False, "error": code}


def _chunks_problem(args: dict[str, Any]) -> str | None:
    """Slack's error code for the call's text and chunks, or None when they are fine."""
    chunks = args.get("chunks") or []
    if not isinstance(chunks, list):
        return "invalid_chunks"
    text = len(str(args.get("markdown_text") or ""))
    for chunk in chunks:
        kind = chunk.get("type") if isinstance(chunk, dict) else None
        if kind == "markdown_text" and isinstance(chunk.get("text"), str):
            text += len(chunk["text"])
        elif kind == "task_update":
            fields_ok = all(isinstance(chunk.get(f), str) and chunk[f] for f in ("id", "title"))
            if not fields_ok or chunk.get("status") not in TASK_STATUSES:
                return "invalid_chunks"
        elif kind not in ("plan_update", "blocks"):
            return "invalid_chunks"
    return "msg_too_long" if text > MARKDOWN_TEXT else None


def _add(message: dict[str, Any], args: dict[str, Any]) -> None:
    chunks = list(args.get("chunks") or [])
    if args.get("markdown_text"):
        chunks.insert(0, {"type": "markdown_text", "text": args["markdown_text"]})
    for chunk in chunks:
        if chunk["type"] == "markdown_text":
            message["text"] += chunk["text"]
    message["chunks"] += chunks


def _start(fake: FakeSlackApi, args: dict[str, Any]) -> dict[str, Any]:
    if fake.stream_refusal is not None:
        return _error(fake.stream_refusal)
    channel = str(args.get("channel", ""))
    if not channel or not args.get("thread_ts"):
        return _error("invalid_arguments")
    if not channel.startswith("D") and not (
        args.get("recipient_user_id") and args.get("recipient_team_id")
    ):
        return _error("invalid_arguments")  # Slack needs the recipient in a channel
    problem = _chunks_problem(args)
    if problem is not None:
        return _error(problem)
    ts = fake.next_ts()
    message = {
        "type": "message",
        "ts": ts,
        "text": "",
        "chunks": [],
        "streaming": True,
        "thread_ts": args["thread_ts"],
        "bot_id": fake.bot_id,
        "user": fake.bot_user_id,
        "username": args.get("username"),
    }
    _add(message, args)
    fake.messages.setdefault(channel, {})[ts] = message
    fake.replied_in(channel, str(args["thread_ts"]))
    return {"ok": True, "channel": channel, "ts": ts}


def _streaming(fake: FakeSlackApi, args: dict[str, Any]) -> dict[str, Any] | str:
    """The stream `args` name, or the error code for it."""
    message = fake.messages.get(str(args.get("channel", "")), {}).get(str(args.get("ts", "")))
    if message is None:
        return "message_not_found"
    if not message.get("streaming"):
        return "message_not_in_streaming_state"
    return _chunks_problem(args) or message


def _append(fake: FakeSlackApi, args: dict[str, Any]) -> dict[str, Any]:
    message = _streaming(fake, args)
    if isinstance(message, str):
        return _error(message)
    if not args.get("markdown_text") and not args.get("chunks"):
        return _error("invalid_arguments")
    _add(message, args)
    return {"ok": True, "channel": args["channel"], "ts": args["ts"]}


def _stop(fake: FakeSlackApi, args: dict[str, Any]) -> dict[str, Any]:
    message = _streaming(fake, args)
    if isinstance(message, str):
        return _error(message)
    if args.get("blocks") is not None:
        refused = refusal("chat.update", {"blocks": args["blocks"]})
        if refused is not None:
            return _error(refused[0])
    _add(message, args)
    message.update(streaming=False, blocks=args.get("blocks"), metadata=args.get("metadata"))
    return {"ok": True, "channel": args["channel"], "ts": args["ts"], "message": message}


STREAM_HANDLERS: dict[str, Callable[[FakeSlackApi, dict[str, Any]], dict[str, Any]]] = {
    "chat.startStream": _start,
    "chat.appendStream": _append,
    "chat.stopStream": _stop,
}
