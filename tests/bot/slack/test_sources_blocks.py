"""The sources line under a reply that used the knowledge base, and the line under a
thread's summary listing what its replies cited."""

from __future__ import annotations

from agents.knowledge.thread_sources import ThreadSources
from bot.slack.render.limits import CONTEXT_TEXT
from bot.slack.render.sources import MAX_SOURCES, sources_blocks, thread_sources_blocks


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


def test_thread_sources_line_links_each_source_and_counts_the_rest() -> None:
    cited = ThreadSources(
        shown=(
            {"id": "a#x", "title": "Refund policy", "heading": "Duplicate charges",
             "url": "https://help.example.com/refunds"},
            {"id": "b#intro", "title": "Fees <&>", "heading": "", "url": None},
        ),
        more=3,
    )  # fmt: skip
    [block] = thread_sources_blocks(cited)
    assert block["type"] == "context"
    assert block["elements"][0]["text"] == (
        "*Documentation the replies cited:* "
        "<https://help.example.com/refunds|Refund policy › Duplicate charges>"
        "  ·  Fees &lt;&amp;&gt;  ·  and 3 more"
    )
    assert thread_sources_blocks(ThreadSources()) == []


def test_thread_sources_line_counts_what_would_not_fit_slacks_limit() -> None:
    long = "https://help.example.com/" + "x" * 1400
    cited = ThreadSources(
        shown=tuple({"id": f"d#{n}", "title": f"Doc {n}", "url": long} for n in range(5))
    )
    [block] = thread_sources_blocks(cited)
    text = block["elements"][0]["text"]
    assert len(text) <= CONTEXT_TEXT
    assert text.count("|Doc ") == 2 and text.endswith("  ·  and 3 more")
