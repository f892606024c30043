"""Which retrieved sections a checked reply cites: those stating one of its values or
sharing a run of content words with it in one sentence, never those sharing only common
words scattered over the section."""

from __future__ import annotations

from agents.knowledge.citations import cited_sources, runs
from agents.knowledge.search import KnowledgeHit
from agents.words import STOPWORDS, key, words
from storage import Database


def _hit(section_id: str, heading: str, text: str) -> KnowledgeHit:
    doc = section_id.split("#", 1)[0]
    return KnowledgeHit(
        id=section_id, doc_id=doc, collection="billing", title=doc.title(), heading=heading,
        url=None, text=text, score=1.0,
    )  # fmt: skip


POLICY = _hit(
    "refunds#duplicate-charges",
    "Duplicate charges",
    "A duplicate charge is refunded in full. The refund reaches the original payment "
    "method within 5 to 10 business days.",
)
SETTINGS = _hit(
    "account#billing-settings",
    "Billing settings",
    "Your card is shown under Settings. Check your account's e-mail there first. A charge "
    "appears on the account page once it is made.",
)
REPLY = (
    "Please check your account settings: the second charge on your card will be refunded "
    "within 5 to 10 business days."
)


def _content(text: str) -> set[str]:
    return {key(w) for w in words(text) if w not in STOPWORDS and not w.isdigit()}


def _ids(cited: list[dict]) -> list[str]:
    return [c["id"] for c in cited]


def test_citations_a_section_stating_a_value_is_cited_one_sharing_common_words_is_not() -> None:
    # The second section shares five of the reply's content words (four used to cite it);
    # none of its sentences shares a run of them with the reply's, nor any value.
    assert len(_content(REPLY) & _content(f"{SETTINGS.heading} {SETTINGS.text}")) >= 5
    assert _ids(cited_sources([SETTINGS, POLICY], REPLY)) == ["refunds#duplicate-charges"]


def test_citations_a_sentence_run_of_content_words_cites_a_section_without_values() -> None:
    reply = "Your money goes back to the original payment method, as always."
    assert _ids(cited_sources([SETTINGS, POLICY], reply)) == ["refunds#duplicate-charges"]
    # The run must sit in one sentence of each: words split by a sentence end are no run.
    assert runs("It goes to the original. Payment method is the card.") == {
        ("paymen", "method", "card")
    }


def test_citations_reply_supported_by_no_section_cites_the_best_ranked() -> None:
    assert _ids(cited_sources([SETTINGS, POLICY], "Happy to help with that today!")) == [
        "account#billing-settings"
    ]
    assert cited_sources([], "Anything.") == []


def test_citations_every_supporting_section_is_cited_in_ranked_order() -> None:
    reply = (
        "Check your account's e-mail under Settings. The refund reaches the original payment "
        "method within 5 to 10 business days."
    )
    assert _ids(cited_sources([SETTINGS, POLICY], reply)) == [
        "account#billing-settings",
        "refunds#duplicate-charges",
    ]


async def test_citations_on_the_sample_a_fix_cites_its_error_not_the_neighbouring_one(
    db: Database,
) -> None:
    # The neighbouring error's section is retrieved too, and shares the fix's common words
    # ("app", "start", "again", "error", "Windows", "settings").
    question = "The desktop app crashes with error 0x80070005 every time I open the settings page."
    hits = await db.knowledge.search(question, collections=["tech"], limit=3)
    reply = (
        "Close the app and start it again with Run as administrator. If the error comes "
        "back on Windows, check that your antivirus does not block the settings folder."
    )
    [neighbour] = [h for h in hits if "0x80070057" in h.id]
    assert len(_content(reply) & _content(f"{neighbour.heading} {neighbour.text}")) >= 5
    assert _ids(cited_sources(hits, reply)) == [
        "tech/troubleshooting#error-0x80070005-access-denied-on-windows"
    ]
