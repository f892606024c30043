"""Every Slack route the bot serves, registered in one place.

Each route's handler is a named method of a small class in `bot.slack.handlers` (or
`bot.slack.assistant`), built here with its collaborators, so a stack trace or a log
names it (`MessageHandlers.on_message`). The app runs with
`process_before_response=True`: each handler acks at once and hands slow work to
`services.worker`, which keeps the task references and bounds concurrency.
"""

from __future__ import annotations

import logging

from slack_bolt.async_app import AsyncApp
from slack_bolt.middleware.assistant.async_assistant import AsyncAssistant

from bot.slack.actions import ThreadActions
from bot.slack.assistant.feedback import FeedbackHandlers
from bot.slack.assistant.panel import PanelThreads
from bot.slack.conversation import SlackReplier
from bot.slack.handlers.commands import CommandHandlers
from bot.slack.handlers.home import HomeHandlers
from bot.slack.handlers.messages import MessageHandlers
from bot.slack.handlers.requests import RequestOnce
from bot.slack.handlers.shortcuts import ShortcutHandlers
from bot.slack.render.blocks import FEEDBACK_ACTION
from bot.slack.render.views import HANDOFF_MODAL
from bot.slack.services import BotServices
from bot.threads.admission import LocalRates, UserRate

__all__ = ["HANDOFF_MODAL", "HANDOFF_SHORTCUT", "SUMMARY_SHORTCUT", "register"]

# The message shortcuts' callback ids, as `manifest.yml` declares them.
SUMMARY_SHORTCUT = "summarize_thread"
HANDOFF_SHORTCUT = "handoff_thread"


def register(app: AsyncApp, services: BotServices) -> None:
    """Attach every listener, and the trigger-id middleware in front of them."""
    settings = services.settings
    # One rate per user across messages, commands, shortcuts, the modal and feedback.
    # A shared database (PostgreSQL) counts for every process; SQLite has one owner.
    counter = LocalRates() if services.db.gate.is_sqlite else services.db.rates
    rate = UserRate(
        counter,
        per_minute=settings.user_rate_per_minute,
        burst=settings.user_rate_burst,
    )
    actions = ThreadActions(services)
    messages = MessageHandlers(services, SlackReplier(services), rate)
    commands = CommandHandlers(services, actions, rate)
    shortcuts = ShortcutHandlers(services, actions, rate)
    panel = PanelThreads(services)
    feedback = FeedbackHandlers(services, rate)
    home = HomeHandlers(services)

    app.middleware(RequestOnce(services).once_per_request)

    # The panel's own events first; its threads' messages fall through to `on_message`.
    assistant = AsyncAssistant(logger=logging.getLogger("slack_bolt.assistant"))
    assistant.thread_started(panel.on_thread_started)
    assistant.thread_context_changed(panel.on_context_changed)
    app.assistant(assistant)

    app.event("app_mention")(messages.on_message)
    app.event("message")(messages.on_message)
    app.action(FEEDBACK_ACTION)(feedback.on_feedback)
    app.event("app_home_opened")(home.on_home)

    app.command("/summary")(commands.on_summary)
    app.command("/handoff")(commands.on_handoff)
    app.command("/new")(commands.on_new)

    app.shortcut(SUMMARY_SHORTCUT)(shortcuts.on_summary_shortcut)
    app.shortcut(HANDOFF_SHORTCUT)(shortcuts.on_handoff_shortcut)
    app.view(HANDOFF_MODAL)(shortcuts.on_handoff_submit)
