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

    `user_claim` is never taken from the model: the service sets it
    (`agents.summary.checks.claims`) unless agent sources state everything the item does, so a
    user's say-so never reads as a verified fact.
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


class ItemSchema(BaseModel):
    """One statement and the 1 to 3 most specific events that support it."""

    model_config = ConfigDict(extra="forbid")

    text: str
    sources: list[str] = Field(
        min_length=1,
        max_length=MAX_SOURCES,
        description="The most specific event ids (e.g. e7) that support this item",
    )


# The answer contract sent to the model as `output_schema` (so as `response_schema`); its
# docstrings are read by the model. Parsing uses the lenient `HandoffRecord`, so an
# over-cited item is reported by name by the validator rather than as a schema error.
class HandoffSchema(BaseModel):
    """A handoff record: the goal, then cited facts, decisions, commitments, open questions."""

    model_config = ConfigDict(extra="forbid")

    goal: str
    facts: list[ItemSchema]
    decisions: list[ItemSchema]
    commitments: list[ItemSchema]
    open_questions: list[ItemSchema]


def response_schema() -> dict[str, Any]:
    """The JSON schema the model is asked to answer with (`maxItems` on every `sources`)."""
    return HandoffSchema.model_json_schema()
