"""The benchmark's support tree, built in our runtime and, when installed, in Google ADK.

Each agent has an instant rule-based model, so one billing turn is exactly: the
supervisor consults policy_checker (AgentTool), then transfers to billing_agent, which
answers: 4 model calls and 6 events in both runtimes. billing_agent may not transfer
back to its parent, so every turn starts at the supervisor, as in ADK's own anchor.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agents import AgentTool, LlmAgent, SequentialAgent
from agents.events import FunctionCall, Part, Usage
from agents.models.base import LlmRequest, LlmResponse
from agents.models.profile import ModelProfile

POLICY = "ALLOWED: a duplicate charge is refundable (rule R-2)."
BILLING = "I've refunded the duplicate charge of $12.50; it arrives within five working days."
TURN_TEXT = "I was charged twice this month, turn {n}"


def current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class RuleModel:
    """An instant model for our runtime: the supervisor's two steps, fixed answers elsewhere."""

    name = "rule"
    profile = ModelProfile()

    def __init__(self, answer: str | None = None) -> None:
        self.answer = answer

    async def generate(self, request: LlmRequest) -> LlmResponse:
        usage = Usage(prompt_tokens=sum(len(c.text) for c in request.contents) // 4)
        if self.answer is not None:
            return LlmResponse.from_text(self.answer, usage=usage)
        last = request.contents[-1].parts[-1] if request.contents else None
        if last is not None and last.function_response is not None:
            call = FunctionCall(name="transfer_to_agent", args={"agent_name": "billing_agent"})
        else:
            call = FunctionCall(name="policy_checker", args={"request": "duplicate charge refund?"})
        return LlmResponse(parts=(Part(function_call=call),), usage=usage)


def build_ours() -> LlmAgent:
    billing = LlmAgent(
        name="billing_agent",
        description="Invoices, refunds, failed payments and plan changes. Not product errors.",
        model=RuleModel(BILLING),
        instruction="Resolve billing questions for a {account_tier?} customer.",
        disallow_transfer_to_parent=True,
        disallow_transfer_to_peers=True,
        output_key="billing_summary",
    )
    tech = SequentialAgent(
        name="tech_support",
        description="Product errors and crashes: diagnoses the cause, then writes fix steps.",
        sub_agents=[
            LlmAgent(name="diagnose", model=RuleModel("cause"), output_key="diagnosis"),
            LlmAgent(name="fix_writer", model=RuleModel("1. fix"), instruction="{diagnosis}"),
        ],
    )
    policy = LlmAgent(
        name="policy_checker",
        description="Says whether an action is allowed under refund and data policy.",
        model=RuleModel(POLICY),
        instruction="Answer ALLOWED or DENIED followed by the policy rule that applies.",
    )
    return LlmAgent(
        name="support_supervisor",
        description="Front door for customer support.",
        model=RuleModel(),
        instruction="Transfer billing issues to billing_agent and product errors to tech_support.",
        tools=[AgentTool(policy)],
        sub_agents=[billing, tech],
    )


def adk_available() -> bool:
    try:
        import google.adk  # noqa: F401
    except ImportError:
        return False
    return True


def build_adk() -> Any:
    """The same tree in Google ADK, with equivalent instant models."""
    from google.adk.agents import LlmAgent as AdkLlmAgent
    from google.adk.agents import SequentialAgent as AdkSequentialAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse as AdkResponse
    from google.adk.tools.agent_tool import AgentTool as AdkAgentTool
    from google.genai import types

    class AdkRuleModel(BaseLlm):
        answer: str | None = None

        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            if self.answer is not None:
                part = types.Part(text=self.answer)
            else:
                last = llm_request.contents[-1].parts[-1] if llm_request.contents else None
                if last is not None and last.function_response is not None:
                    part = types.Part(
                        function_call=types.FunctionCall(
                            name="transfer_to_agent", args={"agent_name": "billing_agent"}
                        )
                    )
                else:
                    part = types.Part(
                        function_call=types.FunctionCall(
                            name="policy_checker", args={"request": "duplicate charge refund?"}
                        )
                    )
            yield AdkResponse(content=types.Content(role="model", parts=[part]))

    def model(answer: str | None = None) -> Any:
        return AdkRuleModel(model="rule", answer=answer)

    billing = AdkLlmAgent(
        name="billing_agent",
        description="Invoices, refunds, failed payments and plan changes. Not product errors.",
        model=model(BILLING),
        instruction="Resolve billing questions for a {account_tier?} customer.",
        disallow_transfer_to_parent=True,
        disallow_transfer_to_peers=True,
        output_key="billing_summary",
    )
    tech = AdkSequentialAgent(
        name="tech_support",
        description="Product errors and crashes: diagnoses the cause, then writes fix steps.",
        sub_agents=[
            AdkLlmAgent(name="diagnose", model=model("cause"), output_key="diagnosis"),
            AdkLlmAgent(name="fix_writer", model=model("1. fix"), instruction="{diagnosis}"),
        ],
    )
    policy = AdkLlmAgent(
        name="policy_checker",
        description="Says whether an action is allowed under refund and data policy.",
        model=model(POLICY),
        instruction="Answer ALLOWED or DENIED followed by the policy rule that applies.",
    )
    return AdkLlmAgent(
        name="support_supervisor",
        description="Front door for customer support.",
        model=model(),
        instruction="Transfer billing issues to billing_agent and product errors to tech_support.",
        tools=[AdkAgentTool(agent=policy)],
        sub_agents=[billing, tech],
    )
