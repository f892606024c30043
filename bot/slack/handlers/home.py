"""App Home: the tab a person opens on the bot, published when they open it."""

from __future__ import annotations

from typing import Any

from bot.slack.render.views import home_view
from bot.slack.services import BotServices


class HomeHandlers:
    """`on_home`, publishing through the services' client in the background."""

    def __init__(self, services: BotServices) -> None:
        self.services = services

    async def on_home(self, event: dict[str, Any]) -> None:
        """Publish the App Home view for the person who opened it."""
        user = event.get("user")
        if isinstance(user, str) and user:
            view = home_view()
            self.services.worker.spawn(self.services.client.views_publish(user_id=user, view=view))
