"""Who may act on a thread (summarise it, hand it off, add a note), asked of Slack.

- `SUPPORT_LEADS` may act on any thread.
- In a direct or group direct message, its members may (the customer included).
- In a channel, `HANDOFF_POLICY` says who else: `members` of the channel,
  `participants` (members who wrote in the thread), or `leads` only. Unset, it is
  participants in a shared or Slack Connect channel (`conversations.info`'s
  `is_shared`, `is_ext_shared`, `is_org_shared`), members elsewhere. A channel Slack
  cannot describe counts as shared (fails closed).

Every refusal is the same answer, so a refusal tells nothing about the thread.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from slack_sdk.errors import SlackApiError

from bot.slack.services import BotServices

log = logging.getLogger(__name__)

Policy = Literal["members", "participants", "leads"]


@dataclass(frozen=True)
class ChannelKind:
    """What `conversations.info` says of a channel (unknown: direct and shared, so
    each check that reads it fails closed)."""

    direct: bool
    shared: bool


class ThreadAccess:
    """Asks Slack what a channel is and who is in it, and applies `HANDOFF_POLICY`."""

    def __init__(self, services: BotServices) -> None:
        self.services = services

    def is_lead(self, user: str) -> bool:
        """One of `SUPPORT_LEADS`."""
        return user in self.services.settings.support_leads

    async def kind(self, channel: str) -> ChannelKind:
        """Whether `channel` is a direct or group direct message, and whether it is shared
        with another organisation or workspace."""
        if channel.startswith("D"):
            return ChannelKind(direct=True, shared=False)
        try:
            answer = await self.services.client.conversations_info(channel=channel)
        except SlackApiError as exc:
            log.info("channel check failed", extra={"error": exc.response.get("error")})
            return ChannelKind(direct=True, shared=True)
        info = answer.get("channel") or {}
        shared = any(info.get(k) for k in ("is_shared", "is_ext_shared", "is_org_shared"))
        return ChannelKind(direct=bool(info.get("is_im") or info.get("is_mpim")), shared=shared)

    def policy(self, kind: ChannelKind) -> Policy:
        """Who besides the leads may act on a thread of a channel of `kind`."""
        configured = self.services.settings.handoff_policy
        if configured is not None:
            return configured
        return "participants" if kind.shared else "members"

    async def is_member(self, user: str, channel: str) -> bool:
        """A member of `channel` (`conversations.members`, at most 50 pages)."""
        cursor = None
        try:
            for _ in range(50):  # bounded: 50 pages of 1000 members
                resp = await self.services.client.conversations_members(
                    channel=channel, limit=1000, cursor=cursor
                )
                if user in resp.get("members", []):
                    return True
                cursor = (resp.get("response_metadata") or {}).get("next_cursor")
                if not cursor:
                    return False
        except SlackApiError as exc:
            log.info("membership check failed", extra={"error": exc.response.get("error")})
        return False
