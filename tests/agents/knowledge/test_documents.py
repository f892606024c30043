"""Knowledge documents: titles, URLs, sections, ids, collections and bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.knowledge.documents import (
    DEFAULT_COLLECTION,
    KnowledgeDocumentError,
    load_document,
    load_folder,
    parse_document,
    slugify,
)


def _parse(text: str, *, path: str = "kb/refunds.md") -> object:
    return parse_document(text.encode(), doc_id="billing/refunds", collection="billing", path=path)


@pytest.mark.parametrize(
    ("text", "title", "url"),
    [
        ("# Refund policy\n\nBody.", "Refund policy", None),
        ("url: https://help.example.com/refunds\n# Refunds\n\nBody.", "Refunds",
         "https://help.example.com/refunds"),
        ("---\nurl: https://x.example/r\nowner: billing\n---\n# R\n\nBody.", "R",
         "https://x.example/r"),
        ("Just some text without a heading.", "refunds", None),
        ("Intro first.\n\n# Not a title\n\nBody.", "refunds", None),
    ],
)  # fmt: skip
def test_document_title_and_url(text: str, title: str, url: str | None) -> None:
    document = _parse(text)
    assert (document.title, document.url) == (title, url)  # type: ignore[attr-defined]


def test_document_sections_split_by_heading_with_stable_ids() -> None:
    document = parse_document(
        b"# Refunds\n\nWe refund duplicates.\n\n## Refund windows\n\n30 days.\n\n"
        b"### Who approves\n\nA lead.\n\n## Refund windows\n\nAgain.\n",
        doc_id="billing/refunds",
        collection="billing",
        path="refunds.md",
    )
    assert [(s.id, s.heading, s.text) for s in document.sections] == [
        ("billing/refunds#intro", "", "We refund duplicates."),
        ("billing/refunds#refund-windows", "Refund windows", "30 days."),
        ("billing/refunds#who-approves", "Who approves", "A lead."),
        ("billing/refunds#refund-windows-2", "Refund windows", "Again."),
    ]
    assert [s.position for s in document.sections] == [0, 1, 2, 3]


def test_document_hash_follows_content() -> None:
    first = _parse("# A\n\nOne.")
    same = _parse("# A\n\nOne.")
    edited = _parse("# A\n\nTwo.")
    assert first.content_hash == same.content_hash != edited.content_hash  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Refund windows", "refund-windows"),
        ("Error 0x80070005!", "error-0x80070005"),
        ("??", "section"),
    ],
)
def test_slugify(heading: str, slug: str) -> None:
    assert slugify(heading) == slug


def test_folder_collections_from_first_level_folder(tmp_path: Path) -> None:
    (tmp_path / "billing" / "deep").mkdir(parents=True)
    (tmp_path / "billing" / "refunds.md").write_text("# Refunds\n\nText.")
    (tmp_path / "billing" / "deep" / "cards.txt").write_text("Cards text.")
    (tmp_path / "faq.md").write_text("# FAQ\n\nText.")
    (tmp_path / "README.md").write_text("# About this folder")
    (tmp_path / "notes.pdf").write_bytes(b"%PDF")
    (tmp_path / ".hidden.md").write_text("# Hidden\n\nx")
    documents = load_folder(tmp_path)
    assert [(d.doc_id, d.collection) for d in documents] == [
        ("billing/deep/cards", "billing"),
        ("billing/refunds", "billing"),
        ("faq", DEFAULT_COLLECTION),
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the document is empty"),
        (b"# Only a title\n\n  \n", "the document is empty"),
        (b"\xff\xfe\x00bad", "not UTF-8 text"),
        (b"x" * 2001, "over the 2,000-byte limit"),
    ],
)
def test_bad_document_named_in_the_error(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "bad.md").write_bytes(content)
    with pytest.raises(KnowledgeDocumentError, match=message) as caught:
        load_folder(tmp_path, max_bytes=2000)
    assert str(tmp_path / "bad.md") in str(caught.value)


def test_unreadable_document_named_in_the_error(tmp_path: Path) -> None:
    # A path that cannot be read as a file (root reads any file, whatever its mode).
    unreadable = tmp_path / "folder.md"
    unreadable.mkdir()
    with pytest.raises(KnowledgeDocumentError, match="cannot be read") as caught:
        load_document(tmp_path, unreadable)
    assert str(unreadable) in str(caught.value)


def test_missing_folder_named_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeDocumentError, match="does not exist"):
        load_folder(tmp_path / "nowhere")
