"""The note on an updated digest: what changed since the thread's earlier digest.

A thread has one message in the lead channel; when the thread goes idle again after
more messages, its new digest (or "summary unavailable" notice) replaces that message's
content, and this note says so, so a reader who saw the earlier version knows what is
new without comparing the two.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.events import Event
from agents.summary.record import SECTIONS, HandoffRecord
from storage.summaries.digests import DigestRow

_NAMES = {
    "facts": ("fact", "facts"),
    "decisions": ("decision", "decisions"),
    "commitments": ("commitment", "commitments"),
    "open_questions": ("open question", "open questions"),
}


def _noun(n: int, section: str) -> str:
    one, many = _NAMES.get(section, (section, section))
    return one if n == 1 else many


def _record(row: DigestRow) -> HandoffRecord | None:
    return HandoffRecord.model_validate(row.record) if row.kind == "digest" else None


def _section_changes(before: HandoffRecord, after: HandoffRecord) -> list[str]:
    """ "goal changed", "2 new facts", "1 open question closed", ... by item text."""
    changes = ["goal changed"] if before.goal.strip() != after.goal.strip() else []
    for section in SECTIONS:
        old = {item.text.strip() for item in getattr(before, section)}
        new = {item.text.strip() for item in getattr(after, section)}
        if added := len(new - old):
            changes.append(f"{added} new {_noun(added, section)}")
        if removed := len(old - new):
            verb = "closed" if section == "open_questions" else "no longer listed"
            changes.append(f"{removed} {_noun(removed, section)} {verb}")
    return changes


def update_note(previous: DigestRow, record: HandoffRecord | None, events: Sequence[Event]) -> str:
    """What the update changed: how many messages the thread had since `previous` (the
    digest the message showed), and, for a new `record`, which sections changed (None:
    the new summary failed validation)."""
    since = previous.last_seq if previous.last_seq is not None else -1
    messages = sum(1 for e in events if e.author == "user" and e.seq > since)
    head = f"Updated after {messages} new message{'' if messages == 1 else 's'} in the thread"
    before = _record(previous)
    if record is None:
        shown = "digest" if before is not None else "notice"
        return f"{head}: the new summary failed validation, so the earlier {shown} is replaced."
    if before is None:
        return f'{head}: this digest replaces the earlier "summary unavailable" notice.'
    changes = _section_changes(before, record)
    return f"{head}: {', '.join(changes) if changes else 'no change to the record'}."
