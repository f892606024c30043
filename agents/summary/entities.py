"""High-value entity extraction: named patterns plus the identifiers tools used or returned.

The extractor is domain-configurable. `patterns` are named regular expressions run on
message text (order and reservation ids, amounts with currency, emails, dates, flight
numbers, times, ...). `tool_keys` maps tool argument and result keys to entity types,
which is how bare values such as an account number or a PIN are recognised: the tool
that consumed them names them. A value once known to be sensitive (PINs, access codes)
is sensitive wherever it appears: it is masked and never demanded in a summary.
Quality is measured by `bench/entity_extractor.py`, not guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.events import Event
from agents.summary.when import is_moment, same_moment

ID_TYPES = frozenset(
    {"order_id", "reservation_id", "booking_id", "account_id", "payment_id", "user_id"}
)
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_WEEKDAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
MASK = "\u2022"  # a masked secret: one bullet per character
# Entity types compared as dates and times (`agents.summary.when`), not only by word.
MOMENT_TYPES = frozenset({"date", "time"})


@dataclass(frozen=True)
class EntityPattern:
    """A named regular expression; group `group` of each match is the entity value."""

    type: str
    regex: re.Pattern[str]
    high_value: bool = True
    sensitive: bool = False
    group: int = 0


def pattern(
    type_: str, regex: str, *, high_value: bool = True, sensitive: bool = False, group: int = 0
) -> EntityPattern:
    """Build an `EntityPattern` from regex source (case-sensitive unless it says otherwise)."""
    return EntityPattern(type_, re.compile(regex), high_value, sensitive, group)


DEFAULT_PATTERNS: tuple[EntityPattern, ...] = (
    pattern("email", r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"),
    pattern("amount", r"(?:[$€£]\s?\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|[$€£]\s?\d+(?:\.\d{1,2})?)"),
    pattern("amount", r"\b\d+(?:\.\d{1,2})?\s?(?:USD|EUR|GBP|dollars)\b"),
    pattern("order_id", r"\b[A-Z]{1,3}-\d{3,}\b"),
    pattern("order_id", r"(?i:\border\s*(?:id|number|#)?\s*(?:is\s*)?#?:?\s*)(\d{6,})\b", group=1),
    pattern("payment_id", r"\b(?:credit_card|gift_card|certificate|paypal)_\d{4,}\b"),
    pattern("user_id", r"\b[a-z]+_[a-z]+_\d{4}\b"),
    pattern("flight_number", r"\b[A-Z]{2,3}\d{3,4}\b"),
    pattern("reservation_id", r"\b(?=[A-Z0-9]{6}\b)(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}\b"),
    pattern("date", r"\b\d{4}-\d{2}-\d{2}\b"),
    pattern("date", r"\b\d{1,2}/\d{1,2}/\d{2,4}\b"),
    pattern("date", rf"\b(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?\b"),
    pattern("date", rf"\b\d{{1,2}}(?:st|nd|rd|th) of (?:{_MONTHS})\b"),
    # A bare ordinal is too ambiguous to demand ("5th and Main", "the 3rd floor").
    pattern("date", r"\b\d{1,2}(?:st|nd|rd|th)\b", high_value=False),
    # "Tuesday" is the day of a booking or a meeting: demanded like any other date.
    pattern("date", rf"\b(?:{_WEEKDAYS})\b"),
    pattern("time", r"(?i)(?<![:\d])\b\d{1,2}\s?[ap]\.?m\b", high_value=False),
    pattern("phone", r"\(\d{3}\)\s?\d{3}-\d{4}"),
    pattern("pin", r"(?i:\bpin\W{0,3}(?:(?:is|to|was)\s+)?)(\d{4,6})\b", sensitive=True, group=1),
)

# Tool argument/result keys (lowercased, "_" removed) -> (entity type, high value, sensitive).
DEFAULT_TOOL_KEYS: Mapping[str, tuple[str, bool, bool]] = {
    "orderid": ("order_id", True, False),
    "reservationid": ("reservation_id", True, False),
    "reservations": ("reservation_id", True, False),
    "userid": ("user_id", True, False),
    "paymentid": ("payment_id", True, False),
    "accountnumber": ("account_id", True, False),
    "accountid": ("account_id", True, False),
    "flightnumber": ("flight_number", True, False),
    "email": ("email", True, False),
    "pin": ("pin", False, True),
    "code": ("access_code", False, True),
    "accesscode": ("access_code", False, True),
    "password": ("password", False, True),
    "roomnumber": ("room_number", False, False),
    "username": ("username", False, False),
    "fullname": ("person_name", False, False),
    "customername": ("person_name", False, False),
    "time": ("time", False, False),
    "day": ("date", False, False),
    "date": ("date", True, False),
    "dob": ("date", True, False),
    "bankbalance": ("amount", True, False),
}
# Keys that identify a record only in a tool *call* (in results they are row ids).
DEFAULT_CALL_ONLY_KEYS: Mapping[str, tuple[str, bool, bool]] = {
    "id": ("booking_id", True, False),
}
# Tool results list much the conversation never touches (a profile's every reservation and
# email), so only these result keys count; a returned id the conversation goes on to use
# is caught where it is used. Extend per domain (e.g. a create_order tool's "order_id").
DEFAULT_RESULT_KEYS: Mapping[str, tuple[str, bool, bool]] = {
    "bankbalance": ("amount", True, False),
    "refundid": ("refund_id", True, False),
    "ticketid": ("ticket_id", True, False),
    "confirmationnumber": ("confirmation_number", True, False),
}
_WRAPPED = re.compile(r"""api\.is_equal_to\(["'](.+?)["']\)""")


@dataclass(frozen=True)
class Entity:
    """One extracted value, where it occurs, and how a summary must treat it."""

    type: str
    value: str
    event_ids: tuple[str, ...]
    high_value: bool = True
    sensitive: bool = False

    @property
    def masked(self) -> str:
        """The value as it may be shown: sensitive values keep only their length."""
        return MASK * len(self.value) if self.sensitive else self.value


def normalize(type_: str, value: str) -> str:
    """A comparison key: amounts as `$<number>`, everything else case-folded."""
    value = value.strip()
    if type_ == "amount":
        number = re.sub(r"[^\d.]", "", value)
        if "." in number:
            number = number.rstrip("0").rstrip(".")
        return "$" + number
    return value.casefold()


@dataclass
class _Found:
    type: str
    value: str
    high_value: bool
    sensitive: bool
    event_ids: dict[str, None] = field(default_factory=dict)


class EntityExtractor:
    """Extracts entities from events with configurable patterns and tool-key mappings."""

    def __init__(
        self,
        patterns: Iterable[EntityPattern] = DEFAULT_PATTERNS,
        tool_keys: Mapping[str, tuple[str, bool, bool]] = DEFAULT_TOOL_KEYS,
        call_only_keys: Mapping[str, tuple[str, bool, bool]] = DEFAULT_CALL_ONLY_KEYS,
        result_keys: Mapping[str, tuple[str, bool, bool]] = DEFAULT_RESULT_KEYS,
        *,
        min_value_len: int = 2,
    ) -> None:
        self.patterns = tuple(patterns)
        self.tool_keys = dict(tool_keys)
        self.call_only_keys = dict(call_only_keys)
        self.result_keys = dict(result_keys)
        self.min_value_len = min_value_len

    def from_text(self, text: str) -> list[tuple[str, str, bool, bool]]:
        """`(type, value, high_value, sensitive)` for every pattern match in `text`."""
        found = []
        taken: list[tuple[int, int]] = []
        for p in self.patterns:
            for match in p.regex.finditer(text):
                start, end = match.span(p.group)
                if any(start < b and a < end for a, b in taken):
                    continue  # an earlier (more specific) pattern already owns this span
                taken.append((start, end))
                found.append((p.type, match.group(p.group), p.high_value, p.sensitive))
        return found

    def from_payload(self, payload: Any, *, call: bool) -> list[tuple[str, str, bool, bool]]:
        """Entities in a tool call's args (patterns and keys) or a result (`result_keys`)."""
        found: list[tuple[str, str, bool, bool]] = []
        self._walk(payload, None, call, found)
        return found

    def _walk(
        self, value: Any, key: str | None, call: bool, out: list[tuple[str, str, bool, bool]]
    ) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                self._walk(v, str(k), call, out)
            return
        if isinstance(value, list):
            for v in value:
                self._walk(v, key, call, out)
            return
        if value is None or isinstance(value, bool):
            return
        text = str(value)
        wrapped = _WRAPPED.fullmatch(text)
        if wrapped:
            text = wrapped.group(1)  # a query wrapper around one literal value
        norm_key = (key or "").lower().replace("_", "")
        if call:
            if isinstance(value, str):
                out.extend(self.from_text(text))
            spec = self.tool_keys.get(norm_key) or self.call_only_keys.get(norm_key)
        else:
            spec = self.result_keys.get(norm_key)
        if spec is None or len(text) < self.min_value_len or "api." in text:
            return
        type_, high_value, sensitive = spec
        out.append((type_, text, high_value, sensitive))

    def extract(self, events: Iterable[Event]) -> list[Entity]:
        """Every entity in `events`, merged by (type, normalised value), in first-seen order.

        A secret split over two messages ("my PIN is", then "4321") is found too: an
        event that ends on a secret's cue makes the first 4-6 digit number of the same
        author's next message that secret."""
        found: dict[tuple[str, str], _Found] = {}
        cued: dict[str, str] = {}  # author -> the secret type their last message cued
        for event in events:
            hits = self.from_text(event.text)
            cue = cued.pop(event.author, None)
            if cue is not None and (bare := _BARE_SECRET.search(event.text)) is not None:
                hits.append((cue, bare.group(1), False, True))
            if (ending := _SECRET_CUE.search(event.text)) is not None:
                cued[event.author] = _CUE_TYPES.get(ending.group(1).casefold(), "access_code")
            for call in event.function_calls:
                hits += self.from_payload(call.args, call=True)
            for response in event.function_responses:
                hits += self.from_payload(response.response, call=False)
            if event.actions.compaction is not None:
                hits += self.from_text(event.actions.compaction.summary)
            for type_, value, high_value, sensitive in hits:
                key = (type_, normalize(type_, value))
                entry = found.get(key)
                if entry is None:
                    entry = found[key] = _Found(type_, value, high_value, sensitive)
                entry.high_value = entry.high_value or high_value
                entry.sensitive = entry.sensitive or sensitive
                entry.event_ids.setdefault(event.id, None)
        sensitive_values = {normalize("", f.value) for f in found.values() if f.sensitive}
        entities = []
        for f in found.values():
            # A value a tool treated as secret is secret under every other label too.
            sensitive = f.sensitive or normalize("", f.value) in sensitive_values
            entities.append(
                Entity(
                    type=f.type,
                    value=f.value,
                    event_ids=tuple(f.event_ids),
                    high_value=f.high_value and not sensitive,
                    sensitive=sensitive,
                )
            )
        return entities


# A message that ends on a secret's name ("my PIN is", "access code:") cues the next one.
_SECRET_CUE = re.compile(
    r"(?i)\b(pin|passcode|password|access code|security code|code)\W{0,3}"
    r"(?:(?:is|was|=)\W{0,3})?$"
)
_CUE_TYPES = {"pin": "pin", "password": "password"}
_BARE_SECRET = re.compile(r"(?<![\w$.,-])(\d{4,6})(?![\w.,-]\d|\w)")


# Word edges for values; a hyphen joins a value to capitals ("A-1001" does not mention
# "1001"), while a range of numbers still mentions both ends ("19th-24th").
_BEFORE = r"(?<!\w)(?-i:(?<![A-Z]-))"
_AFTER = r"(?!\w)(?-i:(?!-[A-Z]))"


def mentions(text: str, entity: Entity) -> bool:
    """Whether `text` mentions `entity` (amounts, dates and times compared by value, in
    any written form, the rest by word)."""
    if entity.type == "amount":
        target = normalize("amount", entity.value)
        numbers = re.findall(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?", text)
        return any(normalize("amount", n) == target for n in numbers)
    escaped = re.escape(entity.value.strip())
    if re.search(rf"{_BEFORE}{escaped}{_AFTER}", text, re.IGNORECASE) is not None:
        return True
    if entity.type in MOMENT_TYPES:
        return same_moment(entity.value, text)
    return False


def as_entity(value: str) -> Entity:
    """A bare value as an entity, typed enough for `mentions` to compare it by value
    (an amount, a date or a time) rather than only by word."""
    if value.startswith("$"):
        return Entity(type="amount", value=value, event_ids=())
    if is_moment(value):
        return Entity(type="date", value=value, event_ids=())
    return Entity(type="", value=value, event_ids=())


def mask_text(text: str, entities: Iterable[Entity]) -> str:
    """`text` with every sensitive entity's value masked."""
    for entity in entities:
        if entity.sensitive and entity.value:
            escaped = re.escape(entity.value)
            text = re.sub(rf"{_BEFORE}{escaped}{_AFTER}", entity.masked, text)
    return text
