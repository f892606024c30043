"""The words a text is matched by: lower-case alphanumeric words, common function words
and the wording of questions dropped, each compared by a light stem cut to a few
characters. Knowledge search ranks sections by them (`agents.knowledge.ranking`), and the
routing evaluation finds the examples closest to a message by them
(`agents.llm.routing_examples`)."""

from __future__ import annotations

import functools
import re

_WORD = re.compile(r"[a-z0-9]+")
# A currency written beside a number is part of the customer's amount ("49.00 USD",
# "USD 49"), not the subject of the question: no document holds the customer's amount.
_CURRENCY = r"(?:usd|eur|gbp|cad|aud|chf|jpy|dollars?|euros?|pounds?)"
_AMOUNT_CURRENCY = re.compile(
    rf"(?<=\d)\s*{_CURRENCY}\b|\b{_CURRENCY}\s*(?=[$€£]?\d)", re.IGNORECASE
)
# Function words and the wording of questions ("how do I", "can you tell me"): they match
# every section and would drown the words that name the topic.
STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be been before being
    between both but by can could did do does doing done during each either else for from
    further get gets getting got had has have having he her here hers him his how i if in
    into is it its itself just let me mine more most my myself no nor not now of off on
    once only or other our ours out over own please same she should so some such tell than
    that the their theirs them then there these they this those through to too under until
    up very want was we were what when where which while who whom why will with would you
    your yours yourself hello hi thanks thank know like need wondering question explain
    help ask regarding s t ll ve re d m""".split()
)
# The version of `key` and `words`: a knowledge index stores it with each document and
# indexes every document again at its next sync when it differs. Raise it with any change
# that keys some word differently (tests/agents/test_words.py pins the keys).
KEYS_VERSION = 1
# A word's key keeps this many characters of its stem: a crude stemmer that still
# matches "consolidate" with "consolidation" and "eligible" with "eligibility".
KEY_CHARS = 6


def stem(word: str) -> str:
    """A light English suffix stripper ("refunds" -> "refund", "charged" -> "charg")."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + keep
    return word


@functools.lru_cache(maxsize=65_536)
def key(word: str) -> str:
    """The form a word is compared in: its stem, cut to `KEY_CHARS`; a word with a digit
    is a code ("0x80070005", "inv2291") and is compared whole."""
    if any(ch.isdigit() for ch in word):
        return word
    return stem(word)[:KEY_CHARS]


def words(text: str) -> list[str]:
    """Lower-case alphanumeric words of `text`."""
    return _WORD.findall(text.lower())


def without_currency(text: str) -> str:
    """`text` without the currency written beside a number ("49.00 USD" -> "49.00")."""
    return _AMOUNT_CURRENCY.sub(" ", text)


def keyed(text: str) -> str:
    """`text` as a full-text index holds it: each word's key, space-separated. Indexing
    and querying the keys, not the database's own stemmer, makes SQLite and PostgreSQL
    match the same words, and match them as the re-ranking does."""
    return " ".join(key(word) for word in words(text))


def query_terms(query: str) -> list[str]:
    """The query's distinct content words, in order (stopwords dropped; every word
    when the query has nothing else)."""
    all_words = list(dict.fromkeys(words(without_currency(query))))
    content = [w for w in all_words if w not in STOPWORDS]
    return content or all_words
