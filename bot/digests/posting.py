"""Posting a stored digest to the lead channel once, even across a crash.

A digest is stored before it is posted, so the stored row is the durable intent. A long
digest is several messages (pages; the later ones in the first one's thread), and each
page carries Slack message metadata naming the digest and the page (`event_type`
`support_bot_digest`). Each page's ts is recorded as soon as Slack returns it.

A process that dies between posting a page and recording its ts leaves the digest
stored without it. Whoever finishes the digest then first looks for its pages in the
lead channel (`conversations.history`, from the digest's creation on, and the first
page's `conversations.replies`, both with `include_all_metadata`), records those it
finds, and posts only the missing ones.

A thread has one message in the lead channel. A later digest of the same thread (it
went idle again after more messages), or its "summary unavailable" notice, updates
that message's pages in place (`chat.update`, which also re-marks them with the new
digest's metadata), continues in its thread when it has more pages, and deletes the
old pages it no longer needs. Updating is idempotent, so a crash before a page's ts is
recorded just updates it again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from slack_sdk.errors import SlackApiError

from bot.slack.permalinks import PermalinkClient, SlackAnswer
from bot.slack.render.limits import NO_UNFURL, Block, paged
from storage.database import Database

EVENT_TYPE = "support_bot_digest"
# Slack's clock and ours may differ: look this much further back than the digest's row.
CLOCK_SKEW_S = 300.0
_PAGE = 200
_MAX_HISTORY_PAGES = 50


class DigestPoster(PermalinkClient, Protocol):
    """The part of slack_sdk's `AsyncWebClient` a digest pass uses (the offline
    `support-bot digest` has a stand-in that only links)."""

    async def chat_postMessage(
        self,
        *,
        channel: str,
        text: str,
        blocks: list[Block],
        unfurl_links: bool,
        unfurl_media: bool,
        thread_ts: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SlackAnswer: ...

    async def chat_update(
        self,
        *,
        channel: str,
        ts: str,
        text: str,
        blocks: list[Block],
        metadata: dict[str, Any] | None = None,
    ) -> SlackAnswer: ...

    async def chat_delete(self, *, channel: str, ts: str) -> SlackAnswer: ...

    async def conversations_history(
        self,
        *,
        channel: str,
        oldest: str | None = None,
        include_all_metadata: bool | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> SlackAnswer: ...

    async def conversations_replies(
        self,
        *,
        channel: str,
        ts: str,
        include_all_metadata: bool | None = None,
        limit: int | None = None,
    ) -> SlackAnswer: ...


@dataclass(frozen=True)
class StoredDigest:
    """What names a stored digest's messages: its id, its session and when it was stored."""

    digest_id: int
    session_id: str
    created_at: float

    def marker(self, page: int) -> dict[str, Any]:
        """The message metadata of page `page`."""
        payload = {"digest_id": self.digest_id, "session": self.session_id, "page": page}
        return {"event_type": EVENT_TYPE, "event_payload": payload}

    def page_of(self, message: Any) -> int | None:
        """The page number `message` is of this digest, or None."""
        meta = message.get("metadata") if isinstance(message, dict) else None
        if not isinstance(meta, dict) or meta.get("event_type") != EVENT_TYPE:
            return None
        payload = meta.get("event_payload")
        if not isinstance(payload, dict):
            return None
        if payload.get("digest_id") != self.digest_id or payload.get("session") != self.session_id:
            return None
        page = payload.get("page")
        return page if isinstance(page, int) and page > 0 else None


@dataclass
class Posted:
    """The first page's ts, and how many pages this call posted (0: all were there)."""

    first_ts: str
    new_pages: int


async def post_digest(
    client: DigestPoster,
    db: Database,
    digest: StoredDigest,
    *,
    channel: str,
    text: str,
    blocks: list[Block],
    before_post: Callable[[], Awaitable[None]],
    resume: bool,
    replaces: Mapping[int, str] | None = None,
) -> Posted:
    """Post the digest's pages that are not in `channel` yet, recording each.

    `replaces`: the pages (page -> ts) of the thread's message already in the channel,
    which this digest updates in place rather than posting anew. `resume`: the digest may
    have been posted in part by a process that died before recording it, so look for its
    pages first. `before_post` runs before each Slack call that changes the channel (the
    job re-checks its lease there).
    """
    replaces = dict(replaces or {})
    pages = paged(blocks)
    posted = await db.digests.posted_pages(digest.digest_id)
    if resume and len(posted) < len(pages):
        first = posted.get(1) or replaces.get(1)
        for page, ts in (await _find_posted(client, channel, digest, first)).items():
            if page not in posted:
                await db.digests.set_posted(digest.digest_id, ts, page=page)
                posted[page] = ts
    new = 0
    for number, blocks_of_page in enumerate(pages, start=1):
        if number in posted:
            continue
        page_text = text if number == 1 else f"{text} (part {number})"
        await before_post()
        if number in replaces:
            try:
                await client.chat_update(
                    channel=channel,
                    ts=replaces[number],
                    text=page_text,
                    blocks=blocks_of_page,
                    metadata=digest.marker(number),
                )
                posted[number] = replaces[number]
            except SlackApiError as exc:
                if exc.response.get("error") != "message_not_found":
                    raise
                # Someone deleted it in Slack: post this page anew; without the first
                # page, the old thread's later pages are out of sight, so post them all.
                replaces = {} if number == 1 else replaces
                replaces.pop(number, None)
        if number not in posted:
            answer = await client.chat_postMessage(
                channel=channel,
                text=page_text,
                blocks=blocks_of_page,
                metadata=digest.marker(number),
                thread_ts=posted[1] if number > 1 else None,
                **NO_UNFURL,
            )
            posted[number] = str(answer["ts"])
        await db.digests.set_posted(digest.digest_id, posted[number], page=number)
        new += 1
    for number, ts in sorted(replaces.items()):
        if number > len(pages):
            await before_post()
            await _delete(client, channel, ts)
    return Posted(first_ts=posted[1], new_pages=new)


async def _delete(client: DigestPoster, channel: str, ts: str) -> None:
    """Delete an old page the updated digest no longer needs (already gone: fine, an
    earlier pass that crashed deleted it)."""
    try:
        await client.chat_delete(channel=channel, ts=ts)
    except SlackApiError as exc:
        if exc.response.get("error") != "message_not_found":
            raise


def _field(answer: SlackAnswer, key: str) -> Any:
    try:
        return answer[key]
    except KeyError:
        return None


async def _find_posted(
    client: DigestPoster, channel: str, digest: StoredDigest, first: str | None
) -> dict[int, str]:
    """The digest's pages already in `channel`, by their metadata. `first`, when known,
    is the ts of the message the pages are in the thread of: the digest's own first
    page, or the thread's earlier message it updates (page 1 only once re-marked)."""
    found: dict[int, str] = {}
    if first is None:
        first = await _find_first(client, channel, digest)
        if first is None:
            return {}
        found[1] = first
    replies = await client.conversations_replies(
        channel=channel, ts=first, include_all_metadata=True, limit=_PAGE
    )
    for message in _field(replies, "messages") or []:
        page = digest.page_of(message)
        if page is not None:
            found[page] = str(message["ts"])
    return found


async def _find_first(client: DigestPoster, channel: str, digest: StoredDigest) -> str | None:
    """The ts of the digest's first page in the channel's history since the digest was
    stored (newest first, a bounded number of pages), or None."""
    cursor: str | None = None
    oldest = f"{max(digest.created_at - CLOCK_SKEW_S, 0):.6f}"
    for _ in range(_MAX_HISTORY_PAGES):
        answer = await client.conversations_history(
            channel=channel, oldest=oldest, include_all_metadata=True, limit=_PAGE, cursor=cursor
        )
        for message in _field(answer, "messages") or []:
            if digest.page_of(message) == 1:
                return str(message["ts"])
        cursor = (_field(answer, "response_metadata") or {}).get("next_cursor") or None
        if cursor is None:
            return None
    return None
