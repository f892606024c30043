"""What the real Slack Web API refuses, for the fake to refuse too.

Arguments per method are those of Slack's published OpenAPI spec
(`../shared/data/slack-api-specs/`) plus the newer ones slack_sdk's method signatures
name (both checked by tests/bot/slack/test_limits.py; the spec predates the
`assistant.threads.*` methods, so theirs are slack_sdk's alone); Block
Kit limits are those of Slack's Block Kit reference. `refusal(method, args)` answers
the error code Slack would give, or None when Slack would accept the call.
"""

from __future__ import annotations

from typing import Any

# The methods the bot calls, with every argument Slack takes for them.
METHOD_ARGS: dict[str, frozenset[str]] = {
    # Bolt's own authorisation passes team_id, which Slack ignores for a bot token.
    "auth.test": frozenset({"token", "team_id"}),
    "chat.postMessage": frozenset(
        {
            "token",
            "as_user",
            "attachments",
            "blocks",
            "channel",
            "icon_emoji",
            "icon_url",
            "link_names",
            "mrkdwn",
            "parse",
            "reply_broadcast",
            "text",
            "thread_ts",
            "unfurl_links",
            "unfurl_media",
            "username",
            "container_id",
            "metadata",
            "markdown_text",
        }
    ),
    "chat.update": frozenset(
        {
            "token",
            "as_user",
            "attachments",
            "blocks",
            "channel",
            "link_names",
            "parse",
            "text",
            "ts",
            "file_ids",
            "reply_broadcast",
            "metadata",
            "markdown_text",
        }
    ),
    "chat.delete": frozenset({"token", "as_user", "channel", "ts"}),
    "chat.postEphemeral": frozenset(
        {
            "token",
            "as_user",
            "attachments",
            "blocks",
            "channel",
            "icon_emoji",
            "icon_url",
            "link_names",
            "parse",
            "text",
            "thread_ts",
            "user",
            "username",
            "markdown_text",
        }
    ),
    "chat.getPermalink": frozenset({"token", "channel", "message_ts"}),
    "conversations.members": frozenset({"token", "channel", "limit", "cursor"}),
    "conversations.replies": frozenset(
        {
            "token",
            "channel",
            "ts",
            "latest",
            "oldest",
            "inclusive",
            "limit",
            "cursor",
            "include_all_metadata",
        }
    ),
    "conversations.history": frozenset(
        {
            "token",
            "channel",
            "latest",
            "oldest",
            "inclusive",
            "limit",
            "cursor",
            "include_all_metadata",
        }
    ),
    "conversations.info": frozenset({"token", "channel", "include_locale", "include_num_members"}),
    "users.info": frozenset({"token", "include_locale", "user"}),
    "chat.startStream": frozenset(
        {
            "token",
            "channel",
            "thread_ts",
            "markdown_text",
            "recipient_team_id",
            "recipient_user_id",
            "chunks",
            "task_display_mode",
            "icon_emoji",
            "icon_url",
            "username",
        }
    ),
    "chat.appendStream": frozenset({"token", "channel", "ts", "markdown_text", "chunks"}),
    "chat.stopStream": frozenset(
        {
            "token",
            "channel",
            "ts",
            "markdown_text",
            "blocks",
            "metadata",
            "chunks",
            "session_status",
        }
    ),
    "views.open": frozenset({"token", "trigger_id", "interactivity_pointer", "view"}),
    "views.update": frozenset({"token", "view_id", "external_id", "view", "hash"}),
    "views.publish": frozenset({"token", "user_id", "view", "hash"}),
}
# The assistant panel's methods (issue 19): the arguments slack_sdk's signatures take
# (the token travels in the Authorization header). Bolt's request-scoped client adds
# `team_id` to every call, which Slack takes (org-wide apps need it).
ASSISTANT_METHOD_ARGS: dict[str, frozenset[str]] = {
    "assistant.threads.setStatus": frozenset(
        {
            "team_id",
            "channel_id",
            "thread_ts",
            "status",
            "loading_messages",
            "icon_emoji",
            "icon_url",
            "username",
        }
    ),
    "assistant.threads.setTitle": frozenset({"team_id", "channel_id", "thread_ts", "title"}),
    "assistant.threads.setSuggestedPrompts": frozenset(
        {"team_id", "channel_id", "thread_ts", "title", "prompts"}
    ),
}
METHOD_ARGS.update(ASSISTANT_METHOD_ARGS)
LOADING_MESSAGES = 10
SUGGESTED_PROMPTS = 4
# Context actions: feedback buttons (and icon buttons), each button's text and value.
CONTEXT_ACTIONS_ELEMENTS = 5
BUTTON_TEXT = 75
BUTTON_VALUE = 2_000
BLOCK_ID = 255

# A response_url answers like a message, plus its own fields.
RESPONSE_URL_ARGS = frozenset(
    {
        "text",
        "blocks",
        "attachments",
        "response_type",
        "replace_original",
        "delete_original",
        "thread_ts",
        "mrkdwn",
        "unfurl_links",
        "unfurl_media",
    }
)

MESSAGE_TEXT = 40_000
MESSAGE_BLOCKS = 50
VIEW_BLOCKS = 100
SECTION_TEXT = 3_000
SECTION_FIELDS = 10
FIELD_TEXT = 2_000
HEADER_TEXT = 150
CONTEXT_ELEMENTS = 10
TEXT_OBJECT = 3_000
VIEW_TITLE = 24
INPUT_LABEL = 2_000
INPUT_MAX_LENGTH = 3_000
OPTIONS = 100
OPTION_TEXT = 75
OPTION_VALUE = 150
PRIVATE_METADATA = 3_000
BLOCK_TYPES = {
    "section",
    "header",
    "context",
    "divider",
    "input",
    "actions",
    "image",
    "context_actions",
}


class Refused(Exception):
    """A payload Slack would not accept; the message says which limit."""


def refusal(method: str, args: dict[str, Any]) -> tuple[str, str] | None:
    """(error code, why) for a call Slack refuses, or None when it would accept it."""
    allowed = RESPONSE_URL_ARGS if method == "response_url" else METHOD_ARGS.get(method)
    if allowed is not None:
        unknown = sorted(k for k in args if not k.startswith("_") and k not in allowed)
        if unknown:
            return "invalid_arguments", f"{method} takes no {', '.join(unknown)}"
    try:
        if method in ("chat.postMessage", "chat.update", "chat.postEphemeral", "response_url"):
            _message(args)
        elif method in ("views.open", "views.update", "views.publish"):
            _view(args.get("view"))
        elif method.startswith("assistant.threads."):
            _assistant(method, args)
    except Refused as exc:
        code = "msg_too_long" if str(exc).startswith("text") else "invalid_blocks"
        if method.startswith("assistant."):
            code = "invalid_arguments"
        return code, str(exc)
    return None


def _check(ok: bool, why: str) -> None:
    if not ok:
        raise Refused(why)


def _message(args: dict[str, Any]) -> None:
    text = args.get("text")
    _check(text is None or len(str(text)) <= MESSAGE_TEXT, f"text over {MESSAGE_TEXT}")
    blocks = args.get("blocks")
    if blocks is None:
        return
    _check(isinstance(blocks, list), "blocks must be a list")
    _check(len(blocks) <= MESSAGE_BLOCKS, f"{len(blocks)} blocks, over {MESSAGE_BLOCKS}")
    for block in blocks:
        _block(block)


def _text_object(obj: Any, limit: int, what: str, *, plain: bool = False) -> None:
    _check(isinstance(obj, dict), f"{what}: not a text object")
    kinds = ("plain_text",) if plain else ("plain_text", "mrkdwn")
    _check(obj.get("type") in kinds, f"{what}: type {obj.get('type')!r}")
    text = obj.get("text")
    _check(isinstance(text, str) and 0 < len(text), f"{what}: empty text")
    _check(len(text) <= limit, f"{what}: {len(text)} characters, over {limit}")


def _block(block: Any) -> None:
    _check(isinstance(block, dict), "block is not an object")
    kind = block.get("type")
    _check(kind in BLOCK_TYPES, f"unknown block type {kind!r}")
    if kind == "section":
        fields = block.get("fields") or []
        _check("text" in block or bool(fields), "section with neither text nor fields")
        if "text" in block:
            _text_object(block["text"], SECTION_TEXT, "section text")
        _check(len(fields) <= SECTION_FIELDS, "section fields over 10")
        for field in fields:
            _text_object(field, FIELD_TEXT, "section field")
    elif kind == "header":
        _text_object(block.get("text"), HEADER_TEXT, "header", plain=True)
    elif kind == "context":
        elements = block.get("elements") or []
        _check(0 < len(elements) <= CONTEXT_ELEMENTS, f"context with {len(elements)} elements")
        for element in elements:
            if element.get("type") != "image":
                _text_object(element, TEXT_OBJECT, "context element")
    elif kind == "context_actions":
        _context_actions(block)
    elif kind == "input":
        _text_object(block.get("label"), INPUT_LABEL, "input label", plain=True)
        element = block.get("element") or {}
        max_length = element.get("max_length")
        _check(max_length is None or 0 < max_length <= INPUT_MAX_LENGTH, "input max_length")
        options = element.get("options")
        if options is not None:
            _check(0 < len(options) <= OPTIONS, f"{len(options)} options")
            for option in options:
                _text_object(option.get("text"), OPTION_TEXT, "option text", plain=True)
                value = option.get("value")
                _check(isinstance(value, str) and len(value) <= OPTION_VALUE, "option value")


def _context_actions(block: dict[str, Any]) -> None:
    block_id = block.get("block_id")
    _check(block_id is None or 0 < len(str(block_id)) <= BLOCK_ID, "block_id over 255")
    elements = block.get("elements") or []
    _check(0 < len(elements) <= CONTEXT_ACTIONS_ELEMENTS, "context_actions elements")
    for element in elements:
        _check(isinstance(element, dict), "context_actions element is not an object")
        kind = element.get("type")
        _check(kind in ("feedback_buttons", "icon_button"), f"context_actions with {kind!r}")
        if kind == "feedback_buttons":
            for side in ("positive_button", "negative_button"):
                button = element.get(side)
                _check(isinstance(button, dict), f"feedback_buttons without {side}")
                _text_object(button.get("text"), BUTTON_TEXT, side, plain=True)
                value = button.get("value")
                _check(isinstance(value, str) and 0 < len(value) <= BUTTON_VALUE, side)
                label = button.get("accessibility_label")
                _check(label is None or len(label) <= BUTTON_TEXT, f"{side} label")


def _assistant(method: str, args: dict[str, Any]) -> None:
    """The arguments each assistant.threads method requires, in the shapes Slack takes."""
    for name in ("channel_id", "thread_ts"):
        _check(isinstance(args.get(name), str) and bool(args[name]), f"{method}: no {name}")
    if method.endswith("setStatus"):
        _check(isinstance(args.get("status"), str), "setStatus: no status")
        loading = args.get("loading_messages")
        if loading is not None:
            _check(isinstance(loading, list), "loading_messages must be a list")
            _check(0 < len(loading) <= LOADING_MESSAGES, "loading_messages over 10")
            _check(all(isinstance(m, str) and m for m in loading), "empty loading message")
    elif method.endswith("setTitle"):
        _check(isinstance(args.get("title"), str) and bool(args["title"]), "setTitle: no title")
    else:
        prompts = args.get("prompts")
        _check(isinstance(prompts, list), "setSuggestedPrompts: prompts must be a list")
        _check(0 < len(prompts) <= SUGGESTED_PROMPTS, "suggested prompts: one to four")
        for prompt in prompts:
            _check(
                isinstance(prompt, dict)
                and set(prompt) == {"title", "message"}
                and all(isinstance(v, str) and v for v in prompt.values()),
                "a prompt is a title and a message",
            )


def _view(view: Any) -> None:
    _check(isinstance(view, dict), "view is not an object")
    if view.get("type") == "modal":
        _text_object(view.get("title"), VIEW_TITLE, "modal title", plain=True)
        for key in ("submit", "close"):
            if key in view:
                _text_object(view[key], VIEW_TITLE, f"modal {key}", plain=True)
    metadata = view.get("private_metadata")
    _check(metadata is None or len(metadata) <= PRIVATE_METADATA, "private_metadata too long")
    blocks = view.get("blocks") or []
    _check(len(blocks) <= VIEW_BLOCKS, f"{len(blocks)} view blocks")
    for block in blocks:
        _block(block)
