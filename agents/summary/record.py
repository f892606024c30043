"""The handoff record: what the user wanted, what is established, decided, promised, open.

Every item cites the event ids it was drawn from, so a validator can check it and a
reader can click through to the turn. The JSON schema sent to the model caps each
item at `MAX_SOURCES` citations, which constrained decoders honour, so a model that
over-cites cannot run the output into its token cap.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_SOURCES = 3
SECTIONS = ("facts", "decisions", "commitments", "open_questions")


class Item(BaseModel):
    """One statement of the record and the events that support it.

    `user_claim` is never taken from the model: the service sets it when every cited
    event is user-authored, so a user's say-so never reads as a verified fact.
    """

    model_config = ConfigDict(extra="ignore")

    text: str
    sources: list[str] = Field(default_factory=list)
    user_claim: bool = False


class HandoffRecord(BaseModel):
    """The five-heading handoff contract. Empty lists are valid answers."""

    model_config = ConfigDict(extra="ignore")

    goal: str
    facts: list[Item] = Field(default_factory=list)
    decisions: list[Item] = Field(default_factory=list)
    commitments: list[Item] = Field(default_factory=list)
    open_questions: list[Item] = Field(default_factory=list)

    def items(self) -> list[tuple[str, int, Item]]:
        """Every item as `(section, 1-based index, item)`, in section order."""
        return [
            (section, index, item)
            for section in SECTIONS
            for index, item in enumerate(getattr(self, section), start=1)
        ]

    def all_text(self) -> str:
        """The goal and every item's text, for recall checks."""
        return "\n".join([self.goal, *(item.text for _, _, item in self.items())])

    def cited_ids(self) -> list[str]:
        """Every cited event id, in order of first citation."""
        seen: dict[str, None] = {}
        for _, _, item in self.items():
            for source in item.sources:
                seen.setdefault(source, None)
        return list(seen)


def response_schema(max_sources: int = MAX_SOURCES) -> dict[str, Any]:
    """The JSON schema the model must answer with (sent as the request's response_schema)."""
    item = {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "sources": {
                "type": "array",
                "items": {"type": "string", "pattern": "^e[0-9]+$"},
                "minItems": 1,
                "maxItems": max_sources,
                "description": "The most specific event ids that support this item",
            },
        },
        "required": ["text", "sources"],
        "additionalProperties": False,
    }
    section = {"type": "array", "items": item}
    return {
        "type": "object",
        "properties": {
            "goal": {"type": "string"},
            "facts": section,
            "decisions": section,
            "commitments": section,
            "open_questions": section,
        },
        "required": ["goal", "facts", "decisions", "commitments", "open_questions"],
        "additionalProperties": False,
    }
