"""The sources line under a reply that used the knowledge base."""

from __future__ import annotations

from bot.slack.render.sources import MAX_SOURCES, sources_blocks


def test_sources_line_links_web_urls_and_escapes_the_rest() -> None:
    [block] = sources_blocks(
        [
            {"id": "a#x", "title": "Refund policy", "heading": "Duplicate charges",
             "url": "https://help.example.com/refunds"},
            {"id": "b#intro", "title": "Fees <&> | rules", "heading": "", "url": None},
            {"id": "c#y", "title": "Guide", "heading": "Setup", "url": "javascript:alert(1)"},
        ]
    )  # fmt: skip
    assert block["type"] == "context"
    assert block["elements"][0]["text"] == (
        "*Sources:* <https://help.example.com/refunds|Refund policy › Duplicate charges>"
        "  ·  Fees &lt;&amp;&gt; | rules  ·  Guide › Setup"
    )


def test_sources_line_absent_without_sources_and_bounded_with_many() -> None:
    assert sources_blocks([]) == []
    many = [{"id": f"d#{n}", "title": f"Doc {n}", "url": None} for n in range(20)]
    [block] = sources_blocks(many)
    assert block["elements"][0]["text"].count("Doc ") == MAX_SOURCES
