"""Every Slack route is registered in one place, to a named module-level handler that a
stack trace names: `listeners.register`'s whole route table, and a failing message's
logged traceback, sent over real HTTP."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

import pytest
from slack_bolt.middleware.assistant.async_assistant import AsyncAssistant

from agents.models.scripted import ScriptedModel
from bot.slack import listeners
from storage.errors import StorageWriteError
from tests.e2e.conftest import StartBot
from tests.e2e.harness import dm
from tests.e2e.trees import support_tree
from tests.fakes.slack_api import FakeSlackApi

Route = tuple[str, object, Callable[..., Any]]


class RouteTable:
    """Stands in for Bolt's app in `listeners.register`: records each route, in order."""

    def __init__(self) -> None:
        self.routes: list[Route] = []

    def middleware(self, handler: Callable[..., Any]) -> None:
        self.routes.append(("middleware", None, handler))

    def assistant(self, assistant: AsyncAssistant) -> None:
        self.routes.append(("assistant", None, type(assistant)))

    def _route(self, kind: str, key: object) -> Callable[[Callable[..., Any]], Any]:
        def add(handler: Callable[..., Any]) -> Any:
            self.routes.append((kind, key, handler))
            return handler

        return add

    def event(self, key: str) -> Callable[[Callable[..., Any]], Any]:
        return self._route("event", key)

    def command(self, key: str) -> Callable[[Callable[..., Any]], Any]:
        return self._route("command", key)

    def shortcut(self, key: str) -> Callable[[Callable[..., Any]], Any]:
        return self._route("shortcut", key)

    def view(self, key: str) -> Callable[[Callable[..., Any]], Any]:
        return self._route("view", key)

    def action(self, key: str) -> Callable[[Callable[..., Any]], Any]:
        return self._route("action", key)


def resolves(handler: Callable[..., Any]) -> bool:
    """Whether `handler` is reachable by its module and qualified name (no `<locals>`)."""
    found: Any = sys.modules[handler.__module__]
    for part in handler.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is getattr(handler, "__func__", handler)


async def test_routes_register_every_listener_to_a_named_module_level_handler(
    start_bot: StartBot,
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])))
    table = RouteTable()
    listeners.register(table, bot.services)  # type: ignore[arg-type]
    assert [(kind, key, getattr(h, "__qualname__", h)) for kind, key, h in table.routes] == [
        ("middleware", None, "RequestOnce.once_per_request"),
        ("assistant", None, "AsyncAssistant"),
        ("event", "app_mention", "MessageHandlers.on_message"),
        ("event", "message", "MessageHandlers.on_message"),
        ("action", "reply_feedback", "FeedbackHandlers.on_feedback"),
        ("event", "app_home_opened", "HomeHandlers.on_home"),
        ("command", "/summary", "CommandHandlers.on_summary"),
        ("command", "/handoff", "CommandHandlers.on_handoff"),
        ("command", "/new", "CommandHandlers.on_new"),
        ("shortcut", "summarize_thread", "ShortcutHandlers.on_summary_shortcut"),
        ("shortcut", "handoff_thread", "ShortcutHandlers.on_handoff_shortcut"),
        ("view", "handoff_modal", "ShortcutHandlers.on_handoff_submit"),
    ]
    handlers = [h for kind, _, h in table.routes if kind != "assistant"]
    assert [h.__qualname__ for h in handlers if not resolves(h)] == []


async def test_routes_a_failing_message_logs_a_traceback_naming_on_message(
    start_bot: StartBot,
    slack: FakeSlackApi,
    database: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = await start_bot(support_tree(ScriptedModel([])))

    async def refused(*_: Any, **__: Any) -> Any:
        raise StorageWriteError("the database refused a read: disk gone")

    # A DM thread reply looks up its conversation before it is accepted: that failure
    # escapes the handler, so Bolt answers 500 (Slack redelivers) and logs it.
    monkeypatch.setattr(database.dm_conversations, "folded_root", refused)
    with caplog.at_level(logging.ERROR, logger="slack_bolt"):
        sent = await bot.send_event(dm("again", ts="1700000200.000200", thread_ts="1.1"))
    assert sent.status == 500
    failures = [r for r in caplog.records if r.exc_info and r.exc_info[1] is not None]
    assert len(failures) == 1
    error = failures[0].exc_info[1]  # type: ignore[index]
    assert isinstance(error, StorageWriteError)
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_globals["__name__"], tb.tb_frame.f_code.co_qualname))
        tb = tb.tb_next
    ours = [frame for frame in frames if frame[0].startswith("bot.")]
    assert ours[0] == ("bot.slack.handlers.messages", "MessageHandlers.on_message")
    assert [q for _, q in ours if "<locals>" in q] == []
