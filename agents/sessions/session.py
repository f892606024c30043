"""A session: one conversation's state and event log."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, Field

from agents.events import Event


class Session(BaseModel):
    """A conversation. Mutated only by its `SessionService` on append.

    `state` is the merged view: session keys plus the app's `app:` keys and the user's
    `user:` keys. `events` may start after the latest compaction boundary when the
    session was loaded with `since_compaction=True`; `events_complete` says which.
    """

    id: str
    app_name: str
    user_id: str
    state: dict[str, Any] = Field(default_factory=dict)
    events: list[Event] = Field(default_factory=list)
    created_at: float = Field(default_factory=time.time)
    last_update_time: float = Field(default_factory=time.time)
    events_complete: bool = True
