"""Dates and times read as values, in any common written form, by python-dateutil.

"July 7th", "7 July", "07/07" and "2024-07-07" are one day; "4 PM", "4pm" and "16:00"
are one time. A text is read phrase by phrase: each word that can anchor a date or a
time (a month or weekday name, an am/pm marker, a number with an ordinal suffix, or
digits joined by "/", ":" or "-") is tried with up to `PHRASE_WORDS` words around it,
longest first, and the first phrase dateutil reads strictly (no fuzzy skipping) is the
value. Which fields the phrase gave is found by reading it against two different default
dates: a field that follows the default was not written. A phrase is read month first and
day first where the two differ ("07/05"), except an ISO date ("2019-03-05"), which is always
year, month, day.

Comparison (`same_moment`): two days are the same when month and day agree and the year
agrees where both give one; a day of the month written alone ("the 5th") is the same as any
date on that day ("March 5"), never the reverse: "March 5" needs its month written; two
times when hour and minute agree; a weekday ("Tuesday")
matches the same weekday, or a date whose year is written ("7 July 2026" is a Tuesday),
never a date without a year, whose weekday the text does not fix.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import date, datetime

from dateutil import parser

PHRASE_WORDS = 4
# Two defaults that differ in every field and are valid for any written day (both years
# leap, both months 31 days long).
_DEFAULTS = (datetime(2000, 1, 1, 0, 0), datetime(2004, 3, 3, 1, 1))
_INFO = parser.parserinfo()
_ORDINALS = ("st", "nd", "rd", "th")
_EDGES = ",.;:!?()[]\"'"
# JSON punctuation around values in tool payloads: '{"date":"2024-05-24"}'.
_BRACKETS = str.maketrans({c: " " for c in '{}[]"='})
# A sentence end with no space after it: "on March 10th.Check out is on March 11th".
_GLUED = re.compile(r"(?<=\w)[.!?;](?=[A-Z])")


@dataclass(frozen=True)
class Moment:
    """A date, a time or both, with only the fields the text wrote (None otherwise)."""

    year: int | None = None
    month: int | None = None
    day: int | None = None
    hour: int | None = None
    minute: int | None = None
    weekday: int | None = None  # Monday is 0

    @property
    def has_day(self) -> bool:
        return self.month is not None and self.day is not None

    @property
    def day_only(self) -> bool:
        """A day of the month written without its month ("the 5th")."""
        return self.month is None and self.day is not None

    def fixed_weekday(self) -> int | None:
        """The weekday the text fixes: written, or that of a date with its year."""
        if self.weekday is not None:
            return self.weekday
        if self.has_day and self.year is not None:
            assert self.month is not None and self.day is not None
            return date(self.year, self.month, self.day).weekday()
        return None


def _anchor(word: str) -> bool:
    if _INFO.month(word) is not None or _INFO.weekday(word) is not None:
        return True
    if _INFO.ampm(word) is not None or (_INFO.ampm(word[-2:]) is not None and word[0].isdigit()):
        return True
    digits = sum(c.isdigit() for c in word)
    if not digits:
        return False
    if word.casefold().endswith(_ORDINALS) and word[:-2].isdigit():
        return True
    return any(sep in word for sep in "/:-") and digits >= 3 and word[0].isdigit()


def _written_year(word: str) -> bool:
    """A word that can carry a year: four digits, or digits joined by "/" or "-"."""
    word = word.strip(_EDGES)
    return (word.isdigit() and len(word) == 4) or (
        any(sep in word for sep in "/-") and word.replace("/", "").replace("-", "").isdigit()
    )


def _parsed(phrase: str, *, dayfirst: bool) -> Moment | None:
    try:
        a, b = (parser.parse(phrase, default=d, dayfirst=dayfirst) for d in _DEFAULTS)
    except (ValueError, OverflowError):
        return None

    def given(field: str) -> int | None:
        value = getattr(a, field)
        return value if value == getattr(b, field) else None

    weekday = next(
        (w for word in phrase.split() if (w := _INFO.weekday(word.strip(_EDGES))) is not None),
        None,
    )
    hour = given("hour")
    minute = given("minute")
    if hour is not None and minute is None:
        minute = 0  # "4 PM" is 16:00
    year = given("year")
    if year is not None and not any(_written_year(word) for word in phrase.split()):
        return None  # "July 7th at 4": dateutil took the hour for a two-digit year
    day = given("day")
    month = given("month")
    if month is None and day is not None and _ordinal_day(phrase, day):
        pass  # "the 5th": a day of the month, written as one
    elif day is None or month is None:
        day = month = None  # a weekday moves the default day; a bare month is no day
    moment = Moment(year, month, day, hour, minute, weekday)
    return moment if moment != Moment() else None


def _ordinal_day(phrase: str, day: int) -> bool:
    """Whether `phrase` writes `day` with an ordinal suffix ("5th"), not as a bare number
    (a bare "5" is an hour or a quantity as often as a day)."""
    return any(
        w.casefold().endswith(_ORDINALS) and w[:-2] == str(day)
        for w in (word.strip(_EDGES) for word in phrase.split())
    )


def read(phrase: str) -> list[Moment]:
    """Every reading of `phrase` as one date or time (month first and day first, when
    they differ); empty when dateutil cannot read it whole."""
    readings = []
    # An ISO date ("2019-03-05") is year, month, day: never read day first (as 3 May).
    orders = (False,) if any(_iso_date(word) for word in phrase.split()) else (False, True)
    for dayfirst in orders:
        moment = _parsed(phrase, dayfirst=dayfirst)
        if moment is not None and moment not in readings:
            readings.append(moment)
    return readings


def _iso_date(word: str) -> bool:
    try:
        date.fromisoformat(word.strip(_EDGES))
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=4096)
def moments(text: str) -> tuple[Moment, ...]:
    """Every date and time `text` writes, each phrase read as in `read`."""
    words = [w.strip(_EDGES) for w in _GLUED.sub(" ", text.translate(_BRACKETS)).split()]
    found: list[Moment] = []
    used = -1
    for index, word in enumerate(words):
        if index <= used or not word or not _anchor(word):
            continue
        phrase = _longest_phrase(words, index, used)
        if phrase is not None:
            used, readings = phrase
            found += readings
    return tuple(found)


def _longest_phrase(words: list[str], index: int, used: int) -> tuple[int, list[Moment]] | None:
    """The longest phrase around `words[index]` (after `used`) that reads as a moment:
    (its last word's index, its readings)."""
    for length in range(PHRASE_WORDS, 0, -1):
        for start in range(max(index - length + 1, used + 1), index + 1):
            chosen = words[start : start + length]
            if len(chosen) < length or not all(chosen):
                continue
            readings = read(" ".join(chosen))
            if readings:
                return start + length - 1, readings
    return None


def _agree(a: Moment, b: Moment) -> bool:
    day = time = False
    if a.has_day and b.has_day:
        if (a.month, a.day) != (b.month, b.day):
            return False
        if a.year is not None and b.year is not None and a.year != b.year:
            return False
        day = True
    elif a.day_only and b.day is not None:
        if a.day != b.day:
            return False
        day = True
    if a.hour is not None and b.hour is not None:
        if (a.hour, a.minute) != (b.hour, b.minute):
            return False
        time = True
    if a.weekday is not None and not a.has_day:
        return b.fixed_weekday() == a.weekday or day or time
    return day or time


def same_moment(value: str, text: str) -> bool:
    """Whether `text` writes the date or time `value` writes, in any form."""
    wanted = moments(value)
    return bool(wanted) and any(_agree(w, m) for w in wanted for m in moments(text))


def is_moment(value: str) -> bool:
    """Whether `value` is one date or time, whole."""
    return bool(read(value.strip(_EDGES)))
