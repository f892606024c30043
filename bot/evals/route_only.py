"""The model of a route-only routing evaluation (`support-bot eval routing --route-only`)."""

from __future__ import annotations

import json

from agents.llm.decide_first.choices import NO
from agents.llm.decide_first.prompts import CONSULT_TITLE, REVIEW_TITLE
from agents.models.base import LlmRequest, LlmResponse, Model
from agents.models.profile import ModelProfile

ROUTE_ONLY_REPLY = "(route-only evaluation: the reply is not written)"


class RouteOnlyModel:
    """`model` for a route-only evaluation: every call goes through except the root's own
    reply once it has decided to answer (a tool-less, schema-less request from the root),
    which is a placeholder, and the second look at that placeholder (the review and the
    consult check, see `agents.llm.decide_first.review`), which sends it. Decisions, tool
    arguments and consulted agents run for real, on `model`'s profile."""

    def __init__(self, model: Model, root: str = "") -> None:
        self.model = model
        self.name = model.name
        self.root = root

    @property
    def profile(self) -> ModelProfile:
        """The wrapped model's profile."""
        return self.model.profile

    async def generate(self, request: LlmRequest) -> LlmResponse:
        is_reply = not request.tools and request.response_schema is None
        if request.agent_name == self.root and is_reply:
            return LlmResponse.from_text(ROUTE_ONLY_REPLY, model=self.name)
        schema = request.response_schema or {}
        if request.agent_name == self.root and schema.get("title") == REVIEW_TITLE:
            return LlmResponse.from_text(json.dumps(self.root), model=self.name)
        if request.agent_name == self.root and schema.get("title") == CONSULT_TITLE:
            return LlmResponse.from_text(json.dumps(NO), model=self.name)
        return await self.model.generate(request)
