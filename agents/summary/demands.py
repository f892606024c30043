"""What the validator would demand of a record of some events: the test a window must
pass before it is worth a model call.

The validator asks a record for two things it finds by itself in the events: every
high-value, non-sensitive entity the extractor finds (recall: ids, amounts, emails,
dates, flight numbers), and one commitment per agent promise (`find_promises`). It has
no extractor for decisions, so a decision counts here only through the values or the
promise it states. A run of events with neither ("Thanks!", "Which hotel?", a trivia
question) holds nothing the validator would check, so summarising it alone costs a model
call that cannot be wrong and says little; `agents.summary.windows` keeps such a window
open until it holds a value.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.events import Event
from agents.summary.checks.coverage import find_promises
from agents.summary.entities import EntityExtractor


def holds_values(events: Sequence[Event], extractor: EntityExtractor) -> bool:
    """True when a record of `events` would be asked for a value or a commitment."""
    listed = list(events)
    if find_promises(listed):
        return True
    return any(e.high_value and not e.sensitive for e in extractor.extract(listed))


SPLIT_VALUES = 6
"""A window demanding this many values or more closes at the end of its invocation, or
inside an invocation that alone holds this many (`agents.summary.windows`)."""


def crowded(events: Sequence[Event], extractor: EntityExtractor) -> bool:
    """True when a record of `events` would be asked for `SPLIT_VALUES` values or more
    (values and promises). A window that fails on one item is a gap, and every value in
    it is lost with it: the fewer values a window holds, the fewer one bad item costs."""
    listed = list(events)
    demanded = sum(1 for e in extractor.extract(listed) if e.high_value and not e.sensitive)
    return demanded + len(find_promises(listed)) >= SPLIT_VALUES
