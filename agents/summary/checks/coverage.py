"""Content checks beyond structure: relevance terms, promises, answered questions, loops.

Pure functions over event text. They find what a record must cover (an agent's
promises) and what it must not claim (an open question a later agent turn answered),
and they spot a model repeating itself.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from agents.compaction import COMPACTION_AUTHOR
from agents.events import Event
from agents.handoff import HANDOFF_AUTHOR
from agents.summary.entities import EntityExtractor
from agents.summary.record import Item

_STOPWORDS = frozenset(
    """about above after again against also because been before being below between both
    could customer does doing down during each from further have having here into itself just
    more most other over same should some such than that their them then there these they this
    those through under until very what when where which while will with would your yours
    agent user please thank thanks asked wants want said says told need needs""".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")

_NUMBER_WORDS = r"\d+|one|two|three|four|five|six|seven|eight|nine|ten|a few|several|24|48|72"
COMMITMENT_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(
        rf"\bwithin (?:the next )?(?:{_NUMBER_WORDS})(?:[- ](?:working|business|calendar))?"
        # "(?! of)": "within 24 hours of booking" states a policy, not a promise.
        r"[- ](?:days?|hours?|weeks?|minutes?)\b(?! of\b)",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:I|we)(?:'ve| have) (?:just )?(?:issued|processed|submitted|sent|booked|cancel+ed|"
        r"refunded|scheduled|filed|arranged|escalated|reported|reserved|credited|upgraded|"
        r"downgraded|updated|changed|added|opened|initiated|requested)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:I|we)(?:'ll| will| shall) (?!need\b|be (?:happy|glad|here|able)\b|help\b|assist\b|"
        r"have to\b|check\b|search\b|look\b|see\b|try\b|answer\b|proceed\b|go ahead\b|retrieve\b|"
        r"wait\b|do my best\b)(?:personally |also |then )?[a-z]+",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:you|it|your \w+|the \w+) (?:will|should) (?:receive|arrive|get|be "
        r"(?:refunded|credited|processed|sent|delivered|issued|charged|shipped|returned|"
        r"reimbursed|contacted|notified))\b",
        re.IGNORECASE,
    ),
)
# A deadline stated in an item ("within five working days") must be stated in its sources:
# small models add the stock deadline of a refund to any refund.
DEADLINE = COMMITMENT_PATTERNS[0]
# A period inside a number ("$12.50") does not end a sentence.
_SENTENCE = re.compile(r"(?:[^.!?\n]|\.(?=\d))+[.!?]?")
_CONDITIONAL = re.compile(r"(?i)\s*(?:once|if|when|after|please|feel free|as soon as)\b")


def sentences(text: str) -> list[str]:
    """The sentences of `text` (a period inside a number does not end one)."""
    return [m.group() for m in _SENTENCE.finditer(text) if m.group().strip()]


def deadlines(text: str) -> list[str]:
    """Every deadline phrase in `text` ("within 24 hours"), lower-cased."""
    return [m.group().lower() for m in DEADLINE.finditer(text)]


def key_terms(text: str) -> set[str]:
    """Content words of `text`, cut to a 5-letter stem so "refunded" matches "refund"."""
    return {word.lower()[:5] for word in _WORD.findall(text) if word.lower() not in _STOPWORDS}


def terms_unsupported(text: str, sources: Sequence[str]) -> bool:
    """The relevance test for an item without values: it has content words, every source
    has some, and no source shares one. A source too short to have any ("Yes, until
    six.") cannot be judged, so an item citing one is given the benefit of the doubt."""
    terms = key_terms(text)
    source_terms = [key_terms(source) for source in sources]
    return bool(terms) and all(source_terms) and not any(terms & t for t in source_terms)


def event_content(event: Event) -> str:
    """Everything an event says: text, tool args and results, compaction summary."""
    chunks = [event.text]
    for call in event.function_calls:
        chunks.append(f"{call.name} {json.dumps(call.args, default=str)}")
    for response in event.function_responses:
        chunks.append(f"{response.name} {json.dumps(response.response, default=str)}")
    if event.actions.compaction is not None:
        chunks.append(event.actions.compaction.summary)
    return "\n".join(chunks)


USER_DERIVED_AUTHORS = frozenset({"user", HANDOFF_AUTHOR, COMPACTION_AUTHOR})


def is_agent_source(event: Event) -> bool:
    """An event an agent or a tool wrote: not the user's, not a hand-off note or record,
    not a compaction summary (people and earlier models wrote those from what the user
    said)."""
    return event.author not in USER_DERIVED_AUTHORS and not event.is_compaction


def is_agent_text(event: Event) -> bool:
    """An agent-authored message (not a tool call or result, not a compaction, not a
    hand-off note or record: those are people's words, never an agent's)."""
    return (
        is_agent_source(event)
        and bool(event.text.strip())
        and not event.function_calls
        and not event.function_responses
    )


@dataclass(frozen=True)
class Promise:
    """An agent sentence that commits to an action or a time."""

    event_id: str
    sentence: str
    phrase: str


def find_promises(events: list[Event]) -> list[Promise]:
    """Every agent-authored sentence matching a `COMMITMENT_PATTERNS` entry."""
    found = []
    for event in events:
        if not is_agent_text(event):
            continue
        for match in _SENTENCE.finditer(event.text):
            sentence = match.group().strip()
            if sentence.endswith("?") or _CONDITIONAL.match(sentence):
                continue  # questions and conditional offers ("Once you ..., I'll") don't promise
            for pattern in COMMITMENT_PATTERNS:
                hit = pattern.search(sentence)
                if hit:
                    found.append(Promise(event.id, sentence, hit.group()))
                    break
    return found


def promise_covered(promise: Promise, commitment_texts: list[str], cited: set[str]) -> bool:
    """A commitment cites the promise's event, or carries its time phrase or its terms."""
    if promise.event_id in cited:
        return True
    phrase = promise.phrase.lower()
    terms = key_terms(promise.sentence)
    for text in commitment_texts:
        if phrase in text.lower():
            return True
        if len(terms & key_terms(text)) >= min(2, len(terms)):
            return True
    return False


def asks_only(text: str) -> bool:
    """Every sentence of `text` is a question: it asks, and states nothing."""
    said = [sentence.strip() for sentence in sentences(text)]
    return bool(said) and all(sentence.endswith("?") for sentence in said)


def answering_event(
    question: str, question_entities: set[str], after_seq: int, events: list[Event]
) -> str | None:
    """The first agent message after `after_seq` that shares an entity or the topic and
    states something (an agent asking back, "Which order, A-1001 or B-2040?", answers
    nothing)."""
    terms = key_terms(question)
    for event in events:
        if event.seq <= after_seq or not is_agent_text(event) or asks_only(event.text):
            continue
        lowered = event.text.lower()
        if any(value.lower() in lowered for value in question_entities):
            return event.id
        if len(terms) >= 2 and len(terms & key_terms(event.text)) >= 2:
            return event.id
    return None


def question_answer(question: Item, events: list[Event], extractor: EntityExtractor) -> str | None:
    """The event of `events` that possibly answers the open question `question` (the
    validator's rule): `answering_event` after the latest event it cites, with the values
    `extractor` finds in its text. None when it cites none of `events`."""
    seqs = {event.id: event.seq for event in events}
    cited = [seqs[s] for s in question.sources if s in seqs]
    if not cited:
        return None
    values = {value for _, value, _, _ in extractor.from_text(question.text)}
    return answering_event(question.text, values, max(cited), events)


def repetition(text: str, *, n: int = 8, limit: int = 4) -> str | None:
    """The most repeated `n`-word run when it occurs more than `limit` times, else None.

    Looping models repeat the same clause or the same run of citations; a record with
    distinct items seldom repeats eight consecutive words five times.
    """
    words = re.findall(r"\S+", text)
    if len(words) < n * (limit + 1):
        return None
    counts = Counter(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    shingle, count = counts.most_common(1)[0]
    return shingle if count > limit else None
