"""Re-ranking: only the words whose key can match the query's are stemmed, and the
words found are exactly those whose key is among the query's."""

from __future__ import annotations

from agents.knowledge.ranking import key_matcher
from agents.words import key, words

TEXT = (
    "Copies of policies are refunded; a refunding policy copied twice. Copy-editing, "
    "COPYING and copier jams, 2copies, policyholders and apolicy."
)


def test_ranking_matcher_finds_every_word_whose_key_is_asked() -> None:
    for asked in (["copies"], ["policy"], ["refund"], ["copy", "policies"], ["jam", "2copies"]):
        keys = {key(w) for w in asked}
        found = [w for w in key_matcher(keys).findall(TEXT.lower()) if key(w) in keys]
        assert found == [w for w in words(TEXT) if key(w) in keys], asked
