"""Who said each user message: the transport's user id on the event, for deletion.

A thread's session belongs to whoever posted first, but anyone in the channel may
write in it. `SpeakerPlugin` stamps the id of the person who actually sent a message
on its user event (`custom_metadata[SPEAKER_ID]`), so `forget --user` finds every
message a person wrote, in every session. The runtime knows nothing of transports:
the id is whatever the caller passed to `run_turn` as `speaker`.
"""

from __future__ import annotations

from agents.callbacks import BasePlugin
from agents.context import InvocationContext
from agents.events import Event
from storage.forget import SPEAKER_ID

__all__ = ["SPEAKER_ID", "SpeakerPlugin", "speaker_of"]


def speaker_of(event: Event) -> str | None:
    """The id of the person who sent `event`, when it is a user message that has one."""
    speaker = event.custom_metadata.get(SPEAKER_ID)
    return speaker if isinstance(speaker, str) and speaker else None


class SpeakerPlugin(BasePlugin):
    """Stamps the invocation's speaker on its user event."""

    name = "speaker"

    async def on_user_message(self, ctx: InvocationContext, event: Event) -> Event | None:
        speaker = ctx.custom_metadata.get(SPEAKER_ID)
        return event.with_metadata(**{SPEAKER_ID: speaker}) if speaker else None
