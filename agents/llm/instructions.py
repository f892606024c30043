"""Instruction templating from session state: `{key}` is required, `{key?}` optional."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agents.errors import InstructionTemplateError

# Keys may carry a scope prefix (app:, user:, temp:) and dots; anything else in braces
# (JSON examples, say) is left alone.
_PLACEHOLDER = re.compile(r"\{((?:app:|user:|temp:)?[A-Za-z_][A-Za-z0-9_.]*)(\?)?\}")


def inject_state(template: str, state: Mapping[str, Any], *, agent_name: str) -> str:
    """Fill placeholders from `state`.

    A missing required key raises `InstructionTemplateError` naming the key; a missing
    optional key becomes the empty string.
    """

    def replace(match: re.Match[str]) -> str:
        key, optional = match.group(1), match.group(2)
        if key in state and state[key] is not None:
            return str(state[key])
        if optional:
            return ""
        raise InstructionTemplateError(key, agent_name=agent_name)

    return _PLACEHOLDER.sub(replace, template)


def template_words(template: str) -> str:
    """`template` without its placeholders: the instruction's own words, as opposed to the
    state values (another agent's output, say) filled into it."""
    return _PLACEHOLDER.sub(" ", template)
