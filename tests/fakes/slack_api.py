"""A fake Slack Web API: a real aiohttp server on 127.0.0.1 that records every call.

Usage::

    async with FakeSlackApi(members={"C1": ["U1"]}) as slack:
        settings = Settings(slack_api_url=slack.url, ...)
        ...
        await slack.wait_for("chat.update", count=1)
        assert slack.calls_to("chat.update")[0]["text"] == ...

What it serves: `auth.test`, `chat.postMessage` (keeping `metadata`, and marking a
`reply_broadcast` as Slack does), `chat.update`, `chat.postEphemeral`, `chat.delete`,
`chat.getPermalink`, `conversations.replies` and `conversations.history` (metadata only
with `include_all_metadata`; history holds no thread replies), `conversations.members`,
`conversations.info`, `users.info`, `views.open` (one view per trigger id),
`views.update` (of a view it opened), `views.publish`,
`apps.connections.open` (answers `socket_url`), the streaming methods
(`tests.fakes.slack_streams`), and `POST /response/<id>` for
`response_url` callbacks (recorded as method `"response_url"`). Any other method
answers `{"ok": true}` and is recorded: the assistant panel's `setTitle` and
`setSuggestedPrompts` among them, each checked for the arguments and shapes Slack
takes. `assistant.threads.setStatus` shows its line in `statuses` until it is set to
"" or, as Slack documents, the app posts a message in the thread (`chat.postMessage`,
`chat.startStream`); an update of an earlier message leaves it.

Strict like Slack: a call with an argument its method does not take, or blocks beyond
Block Kit's documented limits, is refused with Slack's error code (see
`tests.fakes.slack_limits`) and kept in `refused`. `users.info` knows every `U`/`W` id as
a person, `bots` as bot users, and nothing else; `conversations.info` says a `D`
channel is a DM, a `group_dms` channel a group DM and a `shared` channel a Slack
Connect channel.

Faults: `fail("chat.postMessage", status=429, times=1, retry_after=1)` makes the
next `times` calls of that method fail (429 carries `Retry-After`; any other status
answers that HTTP status). Failed attempts are recorded in `attempts`, not `calls`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.slack_limits import refusal
from tests.fakes.slack_streams import STREAM_HANDLERS


@dataclass
class Call:
    """One request the fake received: the method name and its decoded arguments."""

    method: str
    args: dict[str, Any]
    at: float = field(default_factory=time.monotonic)
    status: int = 200


@dataclass
class _Fault:
    status: int
    remaining: int
    retry_after: int


class FakeSlackApi:
    """A recording Slack Web API double. See the module docstring for the API."""

    def __init__(
        self,
        *,
        team_id: str = "T1",
        bot_user_id: str = "UBOT",
        bot_id: str = "BBOT",
        members: dict[str, list[str]] | None = None,
        socket_url: str | None = None,
        latency: float = 0.0,
        bots: set[str] | None = None,
        group_dms: set[str] | None = None,
        shared: set[str] | None = None,
    ) -> None:
        self.team_id = team_id
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.members: dict[str, list[str]] = {k: list(v) for k, v in (members or {}).items()}
        self.socket_url = socket_url
        self.latency = latency
        self.in_flight = 0
        self.peak_in_flight = 0
        self.bots = {bot_user_id, "USLACKBOT", *(bots or set())}
        self.group_dms = set(group_dms or ())
        self.shared = set(shared or ())
        self.calls: list[Call] = []
        self.refused: list[tuple[Call, str]] = []
        self.attempts: list[Call] = []
        # channel -> ts -> message dict (text, blocks, user/bot_id, thread_ts, ...)
        self.messages: dict[str, dict[str, dict[str, Any]]] = {}
        # (channel, thread_ts) -> the panel status line Slack shows under the thread
        self.statuses: dict[tuple[str, str], str] = {}
        # Open modals by view id, and the trigger ids already used (each opens one view).
        self.views: dict[str, dict[str, Any]] = {}
        self._used_triggers: set[str] = set()
        self._faults: dict[str, _Fault] = {}
        # An error code chat.startStream answers with (see tests.fakes.slack_streams).
        self.stream_refusal: str | None = None
        self._before_answer: dict[str, Callable[[Call], None]] = {}
        self._last_ts = 0.0
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """Base URL to use as `SLACK_API_URL` (ends with `/`)."""
        return f"http://127.0.0.1:{self.port}/api/"

    @property
    def response_url_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/response/"

    async def start(self) -> FakeSlackApi:
        app = web.Application()
        app.router.add_post("/api/{method}", self._handle)
        app.router.add_get("/api/{method}", self._handle)
        app.router.add_post("/response/{token}", self._handle_response_url)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeSlackApi:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- test-facing helpers -------------------------------------------------------

    def fail(self, method: str, *, status: int = 500, times: int = 1, retry_after: int = 1) -> None:
        """Make the next `times` calls to `method` fail with `status`."""
        self._faults[method] = _Fault(status=status, remaining=times, retry_after=retry_after)

    def before_answer(self, method: str, hook: Callable[[Call], None] | None) -> None:
        """Run `hook` once Slack has done a `method` call but before the caller hears
        back (to kill the caller in between, say); None removes it."""
        if hook is None:
            self._before_answer.pop(method, None)
        else:
            self._before_answer[method] = hook

    def calls_to(self, method: str) -> list[dict[str, Any]]:
        """Arguments of every successful call to `method`, in arrival order."""
        return [c.args for c in self.calls if c.method == method]

    def next_ts(self) -> str:
        """A fresh, increasing Slack timestamp: like Slack's, the Unix time of the post
        (to the microsecond), so that reading history `oldest` a time works."""
        self._last_ts = max(time.time(), self._last_ts + 0.000001)
        return f"{self._last_ts:.6f}"

    def add_message(
        self, channel: str, *, ts: str, text: str, user: str, thread_ts: str | None = None
    ) -> None:
        """Seed a human message (as if Slack had it) for `conversations.replies`."""
        msg = {"type": "message", "ts": ts, "text": text, "user": user}
        if thread_ts:
            msg["thread_ts"] = thread_ts
        self.messages.setdefault(channel, {})[ts] = msg

    def thread(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """Messages of one thread (parent first), as currently stored."""
        msgs = [
            m
            for ts, m in self.messages.get(channel, {}).items()
            if ts == thread_ts or m.get("thread_ts") == thread_ts
        ]
        return sorted(msgs, key=lambda m: float(m["ts"]))

    async def wait_for(
        self,
        method: str | Callable[[FakeSlackApi], bool],
        *,
        count: int = 1,
        within: float = 10.0,
    ) -> None:
        """Wait until `method` was called `count` times (or the predicate holds)."""

        def done() -> bool:
            if callable(method):
                return method(self)
            return len(self.calls_to(method)) >= count

        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(done), within)

    # --- server --------------------------------------------------------------------

    async def _decode(self, request: web.Request) -> dict[str, Any]:
        args: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            body = await request.json() if request.can_read_body else {}
            args.update(body or {})
        else:
            args.update(await request.post())
        for key in ("blocks", "attachments", "view", "metadata"):
            if isinstance(args.get(key), str):
                try:
                    args[key] = json.loads(args[key])
                except ValueError:
                    pass
        if "authorization" in request.headers:
            args["_token"] = request.headers["authorization"].removeprefix("Bearer ")
        return args

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await self._decode(request)
        if self.latency:
            # Requests held at once: how many connections the client really had open.
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                await asyncio.sleep(self.latency)
            finally:
                self.in_flight -= 1
        fault = self._faults.get(method)
        if fault is not None and fault.remaining > 0:
            fault.remaining -= 1
            self.attempts.append(Call(method, args, status=fault.status))
            headers = {"Retry-After": str(fault.retry_after)} if fault.status == 429 else {}
            body = {"ok": False, "error": "ratelimited" if fault.status == 429 else "fatal_error"}
            return web.json_response(body, status=fault.status, headers=headers)
        self.attempts.append(Call(method, args))
        refused = refusal(method, args)
        if refused is not None:
            return self._refuse(Call(method, args), *refused)
        result = self._answer(method, args)
        call = Call(method, args)
        await self._record(call)
        hook = self._before_answer.get(method)
        if hook is not None:
            hook(call)
        return web.json_response(result)

    async def _handle_response_url(self, request: web.Request) -> web.Response:
        args = await self._decode(request)
        args["_response_token"] = request.match_info["token"]
        refused = refusal("response_url", args)
        if refused is not None:
            return self._refuse(Call("response_url", args), *refused)
        await self._record(Call("response_url", args))
        return web.json_response({"ok": True})

    def _refuse(self, call: Call, code: str, why: str) -> web.Response:
        self.refused.append((call, why))
        body = {"ok": False, "error": code, "response_metadata": {"messages": [why]}}
        return web.json_response(body)

    async def _record(self, call: Call) -> None:
        self.calls.append(call)
        async with self._changed:
            self._changed.notify_all()

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        handler = _HANDLERS.get(method)
        if handler is None:
            return {"ok": True}
        return handler(self, args)

    def _post(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = args.get("channel", "")
        ts = self.next_ts()
        msg = {
            "type": "message",
            "ts": ts,
            "text": args.get("text", ""),
            "blocks": args.get("blocks"),
            "bot_id": self.bot_id,
            "user": self.bot_user_id,
            "username": args.get("username"),
        }
        if isinstance(args.get("metadata"), dict):
            msg["metadata"] = args["metadata"]
        if args.get("thread_ts"):
            msg["thread_ts"] = args["thread_ts"]
            self.replied_in(channel, str(args["thread_ts"]))
            if _true(args.get("reply_broadcast")):
                # Also shown in the channel (or DM), as Slack marks it.
                msg["subtype"] = "thread_broadcast"
        self.messages.setdefault(channel, {})[ts] = msg
        return {"ok": True, "channel": channel, "ts": ts, "message": msg}

    def replied_in(self, channel: str, thread_ts: str) -> None:
        """The app posted in the thread: Slack clears its status line there."""
        self.statuses.pop((channel, thread_ts), None)

    def _set_status(self, args: dict[str, Any]) -> dict[str, Any]:
        where = (str(args.get("channel_id", "")), str(args.get("thread_ts", "")))
        if args.get("status"):
            self.statuses[where] = str(args["status"])
        else:
            self.statuses.pop(where, None)
        return {"ok": True}

    def _update(self, args: dict[str, Any]) -> dict[str, Any]:
        channel, ts = args.get("channel", ""), args.get("ts", "")
        msg = self.messages.get(channel, {}).get(ts)
        if msg is None:
            return {"ok": False, "error": "message_not_found"}
        msg.update(text=args.get("text", ""), blocks=args.get("blocks"), edited=True)
        if args.get("metadata") is not None:
            msg["metadata"] = args["metadata"]
        return {"ok": True, "channel": channel, "ts": ts, "text": msg["text"]}

    def _info(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(args.get("channel", ""))
        if channel not in self.members and not channel.startswith("D"):
            return {"ok": False, "error": "channel_not_found"}
        im, mpim = channel.startswith("D"), channel in self.group_dms
        shared = channel in self.shared
        kind = {
            "is_channel": not (im or mpim),
            "is_im": im,
            "is_mpim": mpim,
            # A Slack Connect channel is shared with another organisation.
            "is_shared": shared,
            "is_ext_shared": shared,
            "is_org_shared": False,
        }
        return {"ok": True, "channel": {"id": channel, **kind}}

    def _views_open(self, args: dict[str, Any]) -> dict[str, Any]:
        trigger = args.get("trigger_id")
        if not trigger or "view" not in args:
            return {"ok": False, "error": "invalid_arguments"}
        if trigger in self._used_triggers:
            return {"ok": False, "error": "expired_trigger_id"}
        self._used_triggers.add(trigger)
        view_id = "V" + self.next_ts().replace(".", "")
        self.views[view_id] = dict(args["view"], id=view_id)
        return {"ok": True, "view": self.views[view_id]}

    def _views_update(self, args: dict[str, Any]) -> dict[str, Any]:
        view_id = args.get("view_id")
        if "view" not in args or not (view_id or args.get("external_id")):
            return {"ok": False, "error": "invalid_arguments"}
        if view_id not in self.views:
            return {"ok": False, "error": "not_found"}
        self.views[view_id] = dict(args["view"], id=view_id)
        return {"ok": True, "view": self.views[view_id]}

    def _delete(self, args: dict[str, Any]) -> dict[str, Any]:
        channel, ts = args.get("channel", ""), args.get("ts", "")
        if self.messages.get(channel, {}).pop(ts, None) is None:
            return {"ok": False, "error": "message_not_found"}
        return {"ok": True, "channel": channel, "ts": ts}

    def _user(self, args: dict[str, Any]) -> dict[str, Any]:
        user = str(args.get("user", ""))
        if user[:1] not in ("U", "W"):
            return {"ok": False, "error": "user_not_found"}
        bot = user in self.bots
        return {
            "ok": True,
            "user": {
                "id": user,
                "team_id": self.team_id,
                "name": user.lower(),
                "deleted": False,
                "is_bot": bot,
                "is_app_user": False,
            },
        }

    def _replies(self, args: dict[str, Any]) -> dict[str, Any]:
        msgs = self.thread(args.get("channel", ""), args.get("ts", ""))
        if not msgs:
            return {"ok": False, "error": "thread_not_found"}
        return {"ok": True, "messages": _shown(msgs, args), "has_more": False}

    def _history(self, args: dict[str, Any]) -> dict[str, Any]:
        """The channel's messages, newest first: top-level ones and thread broadcasts
        (not thread replies), between `oldest` and `latest`, a page at a time."""
        channel = str(args.get("channel", ""))
        if channel not in self.messages and channel not in self.members:
            return {"ok": False, "error": "channel_not_found"}
        inclusive = _true(args.get("inclusive"))
        oldest, latest = float(args.get("oldest") or 0), float(args.get("latest") or 1e12)

        def within(ts: float) -> bool:
            if inclusive:
                return oldest <= ts <= latest
            return oldest < ts < latest

        msgs = [
            m
            for ts, m in self.messages.get(channel, {}).items()
            if within(float(ts))
            and (m.get("thread_ts") in (None, ts) or m.get("subtype") == "thread_broadcast")
        ]
        msgs.sort(key=lambda m: float(m["ts"]), reverse=True)
        start = int(args.get("cursor") or 0)
        limit = int(args.get("limit") or 100)
        page = msgs[start : start + limit]
        more = start + limit < len(msgs)
        return {
            "ok": True,
            "messages": _shown(page, args),
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def _members(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = args.get("channel", "")
        if channel not in self.members:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "members": self.members[channel], "response_metadata": {}}

    def _permalink(self, args: dict[str, Any]) -> dict[str, Any]:
        channel, ts = args.get("channel", ""), args.get("message_ts", "")
        link = f"https://fake.slack.com/archives/{channel}/p{ts.replace('.', '')}"
        return {"ok": True, "channel": channel, "permalink": link}

    def _auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://fake.slack.com/",
            "team": "Fake",
            "team_id": self.team_id,
            "user": "support-bot",
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
        }

    def _connections_open(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.socket_url is None:
            return {"ok": False, "error": "not_allowed_token_type"}
        return {"ok": True, "url": self.socket_url}


def _true(value: Any) -> bool:
    """A boolean argument as Slack reads it (JSON true, or "true"/"1" in a form or query)."""
    return value is True or value in ("true", "1")


def _shown(messages: list[dict[str, Any]], args: dict[str, Any]) -> list[dict[str, Any]]:
    """Messages as a read method returns them: metadata only with `include_all_metadata`."""
    if _true(args.get("include_all_metadata")):
        return [dict(m) for m in messages]
    return [{k: v for k, v in m.items() if k != "metadata"} for m in messages]


_HANDLERS: dict[str, Callable[[FakeSlackApi, dict[str, Any]], dict[str, Any]]] = {
    "auth.test": FakeSlackApi._auth_test,
    "chat.postMessage": FakeSlackApi._post,
    "chat.update": FakeSlackApi._update,
    "chat.postEphemeral": lambda self, a: {"ok": True, "message_ts": self.next_ts()},
    "chat.getPermalink": FakeSlackApi._permalink,
    "conversations.replies": FakeSlackApi._replies,
    "conversations.history": FakeSlackApi._history,
    "conversations.members": FakeSlackApi._members,
    "conversations.info": FakeSlackApi._info,
    "users.info": FakeSlackApi._user,
    "chat.delete": FakeSlackApi._delete,
    "views.open": FakeSlackApi._views_open,
    "views.update": FakeSlackApi._views_update,
    "views.publish": lambda self, a: {"ok": True, "view": {"id": "VHOME"}},
    "apps.connections.open": FakeSlackApi._connections_open,
    "assistant.threads.setStatus": FakeSlackApi._set_status,
}
# Streamed messages (chat.startStream, appendStream, stopStream): tests.fakes.slack_streams.
_HANDLERS.update(STREAM_HANDLERS)
