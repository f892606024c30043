"""Fitting escaped mrkdwn within Slack's limits, and the fake's rules against Slack's spec."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.render.limits import SECTION_TEXT, fit_sections, paged, section
from bot.slack.render.mrkdwn import escape, honest_label, markdown_to_mrkdwn, split_message
from tests.fakes.slack_limits import METHOD_ARGS

ROOT = Path(__file__).resolve().parents[3]
SPEC = "data/slack-api-specs/slack_web_openapi_v2_without_examples.json"


def test_split_never_cuts_an_entity_or_a_link_and_loses_nothing() -> None:
    link = "<https://example.com/a/very/long/path|the docs>"
    text = escape("A&B " * 30) + link + escape(" <x>" * 400)
    for limit in (60, 97, 120, 333):
        chunks = split_message(text, limit)
        assert all(len(c) <= limit for c in chunks)
        assert all(c.count("&") == c.count(";") for c in chunks)
        assert sum(link in c for c in chunks) == 1
        assert "".join(chunks).replace(" ", "") == text.replace(" ", "")


def test_split_prefers_line_boundaries() -> None:
    lines = [f"line {n} " + "x" * 40 for n in range(200)]
    chunks = split_message("\n".join(lines), SECTION_TEXT)
    assert all(len(c) <= SECTION_TEXT for c in chunks)
    assert [line for c in chunks for line in c.split("\n")] == lines


def test_oversize_sections_become_several_and_pages_continue() -> None:
    body = "\n".join(f"• item {n} " + "y" * 80 for n in range(2000))
    fitted = fit_sections([section(body)])
    assert all(len(b["text"]["text"]) <= SECTION_TEXT for b in fitted)
    assert "\n".join(b["text"]["text"] for b in fitted) == body
    pages = paged([section(body)])
    assert len(pages) > 1 and all(len(p) <= 50 for p in pages)
    assert "Continued in this thread" in json.dumps(pages[0][-1])


@pytest.mark.parametrize(
    ("label", "url", "shown"),
    [
        ("https://bank.example.com/login", "https://evil.example/x", "https://evil.example/x"),
        ("bank.example.com", "https://evil.example", "https://evil.example"),
        ("example.com", "https://www.example.com/a", "example.com"),
        ("the docs", "https://evil.example", "the docs"),
        ("v1.2 notes", "https://a.io", "v1.2 notes"),
    ],
)
def test_link_labels_never_name_another_host(label: str, url: str, shown: str) -> None:
    assert honest_label(label, url) == shown
    assert markdown_to_mrkdwn(f"[{label}]({url})") == f"<{url}|{escape(shown)}>"


def spec_file() -> Path:
    for shared in (ROOT.parent / "shared", ROOT.parent.parent / "shared"):
        if (shared / SPEC).exists():
            return shared / SPEC
    pytest.skip("Slack's Web API spec is not next to the repository")


def test_fake_takes_only_arguments_slack_documents() -> None:
    paths = json.loads(spec_file().read_text())["paths"]
    for method, allowed in METHOD_ARGS.items():
        # Methods newer than the spec (chat.startStream, say) are checked against slack_sdk.
        operations = paths.get(f"/{method}", {}).values()
        documented = {p["name"] for op in operations for p in op["parameters"]} or {"token"}
        sdk = set(inspect.signature(getattr(AsyncWebClient, method.replace(".", "_"))).parameters)
        extra = allowed - documented - sdk - {"team_id"}
        assert extra == set(), method
    assert "username" not in METHOD_ARGS["chat.update"]
