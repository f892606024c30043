"""A summary model for whole flows: it writes a record the validator accepts from
whatever transcript it is given, so a test can run many windows without scripting each.

Every user line becomes a fact ("The user says: ..."), every agent message a
commitment, every tool result a fact, each citing its own line; the goal is fixed.
Lines listed in `fail` (by their text) are left out, so the window holding them fails
validation (a dropped value) on every attempt. Usage is counted as a server would report
it, 4 characters a token.
"""

from __future__ import annotations

import json
import re

from agents.events import Usage
from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ModelProfile
from agents.summary.agent import SUMMARIZER_NAME
from agents.summary.transcript import FENCE_CLOSE, FENCE_OPEN

LINE = re.compile(r"^\[(e\d+)\] (\S+)(?:: (.*)| RESULT \S+ (.*))$")
GOAL = "Help the customer with their request"


class TranscriptSummarizer:
    """Answers summary requests from the transcript; counts the transcripts it saw."""

    name = "transcript-summarizer"
    profile = ModelProfile()

    def __init__(self, *, fail: tuple[str, ...] = ()) -> None:
        self.fail = fail
        self.transcripts: list[str] = []
        self.requests: list[LlmRequest] = []

    async def generate(self, request: LlmRequest) -> LlmResponse:
        self.requests.append(request)
        if request.agent_name != SUMMARIZER_NAME:
            return LlmResponse.from_text(json.dumps({"text": "Noted."}))
        prompt = request.contents[-1].text
        transcript = prompt[prompt.index(FENCE_OPEN) + len(FENCE_OPEN) : prompt.index(FENCE_CLOSE)]
        self.transcripts.append(transcript)
        facts: list[dict[str, object]] = []
        commitments: list[dict[str, object]] = []
        for line in transcript.strip().splitlines():
            found = LINE.match(line)
            if found is None or any(text in line for text in self.fail):
                continue
            event_id, author, text, result = found.groups()
            if result is not None:
                facts.append({"text": f"Result: {result}", "sources": [event_id]})
            elif author == "user":
                facts.append({"text": f"The user says: {text}", "sources": [event_id]})
            else:
                commitments.append({"text": text, "sources": [event_id]})
        record = {
            "goal": GOAL,
            "facts": facts,
            "decisions": [],
            "commitments": commitments,
            "open_questions": [],
        }
        text = json.dumps(record)
        usage = Usage(prompt_tokens=len(prompt) // 4, completion_tokens=len(text) // 4)
        return LlmResponse.from_text(text, usage=usage)
