"""Re-ranking: only the words whose key can match the query's are stemmed, and the
words found are exactly those whose key is among the query's."""

from __future__ import annotations

from agents.knowledge.ranking import CorpusStats, distinctive_terms, key_matcher
from agents.words import key, keyed, words

TEXT = (
    "Copies of policies are refunded; a refunding policy copied twice. Copy-editing, "
    "COPYING and copier jams, 2copies, policyholders and apolicy."
)


def test_ranking_matcher_finds_every_word_whose_key_is_asked() -> None:
    for asked in (["copies"], ["policy"], ["refund"], ["copy", "policies"], ["jam", "2copies"]):
        keys = {key(w) for w in asked}
        found = [w for w in key_matcher(keys).findall(TEXT.lower()) if key(w) in keys]
        assert found == [w for w in words(TEXT) if key(w) in keys], asked


def test_ranking_matches_candidates_on_distinctive_terms_only() -> None:
    lengths = {"avg_title": 10.0, "avg_heading": 10.0, "avg_body": 100.0}
    stats = CorpusStats(
        sections=1000,
        doc_freq={"student": 600, "loan": 200, "consolidate": 3, "zzz": 0, "refund": 90},
        **lengths,
    )
    assert distinctive_terms(["student", "loan", "consolidate", "zzz"], stats) == [
        "loan",
        "consolidate",
    ]
    assert distinctive_terms(["student", "zzz"], stats) == ["student", "zzz"]
    few = CorpusStats(sections=5, doc_freq={"refund": 4, "error": 1}, **lengths)
    assert distinctive_terms(["refund", "error"], few) == ["refund", "error"]


def test_ranking_keys_compare_codes_whole_and_words_by_stem() -> None:
    """Error codes and invoice numbers differ in their last digits, so a word with a digit
    keeps all of it; other words are cut to a stem prefix ("registration" ~ "register")."""
    assert key("0x80070005") != key("0x80070057")
    assert key("registration") == key("registered") == key("register")
    assert keyed("Error 0x80070005: Registrations renewed!") == "error 0x80070005 regist renew"
