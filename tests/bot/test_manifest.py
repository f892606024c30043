"""manifest.yml is a valid v1 Slack manifest and declares every route the bot serves."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from bot.config import Settings
from bot.slack.listeners import HANDOFF_SHORTCUT, SUMMARY_SHORTCUT

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT.parent / "shared" / "data" / "slack-manifest-schema" / "manifest.schema.1.0.0.json"


@pytest.mark.skipif(
    not SCHEMA.is_file(), reason=f"Slack's manifest schema is not here ({SCHEMA}): needs ../shared"
)
def test_manifest_validates_against_slack_schema() -> None:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text())
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validate(manifest, schema)


def test_manifest_declares_commands_shortcuts_and_socket_mode() -> None:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text())
    commands = {c["command"] for c in manifest["features"]["slash_commands"]}
    shortcuts = {s["callback_id"] for s in manifest["features"]["shortcuts"]}
    assert commands == {"/summary", "/handoff", "/new"}
    assert shortcuts == {SUMMARY_SHORTCUT, HANDOFF_SHORTCUT}
    assert manifest["settings"]["socket_mode_enabled"] is True
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert "app_mention" in manifest["settings"]["event_subscriptions"]["bot_events"]


def test_manifest_declares_the_assistant_panel() -> None:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text())
    events = set(manifest["settings"]["event_subscriptions"]["bot_events"])
    assert manifest["features"]["assistant_view"]["assistant_description"]
    assert "assistant:write" in manifest["oauth_config"]["scopes"]["bot"]
    assert {"assistant_thread_started", "assistant_thread_context_changed", "message.im"} <= events


def test_manifest_requests_customize_only_with_the_setting_on() -> None:
    """`chat:write.customize` lets an app post under any name: it is not asked for while
    `CHAT_WRITE_CUSTOMIZE` is off, its default."""
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text())
    assert Settings(_env_file=None).chat_write_customize is False
    assert "chat:write" in manifest["oauth_config"]["scopes"]["bot"]
    assert "chat:write.customize" not in manifest["oauth_config"]["scopes"]["bot"]
