"""`LiteLlmModel`: the runtime's one way to reach a real model, through `litellm.acompletion`.

litellm is imported on the first call (in a worker thread, since the import takes 3-4 s),
never when this module is imported; `preload_litellm()` lets a process pay that cost at
start-up instead of on its first reply.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from agents.events import Usage
from agents.metrics import REGISTRY
from agents.models.base import LlmRequest, LlmResponse, ModelError
from agents.models.litellm_stream import stream_completion
from agents.models.openai_format import (
    MalformedToolCall,
    as_dict,
    dump_json,
    from_openai_response,
    to_openai_params,
    usage_from_openai,
)
from agents.models.profile import ChoiceScoring, DecisionLayout, ModelProfile, ToolDecision
from agents.models.prompted_tools import parse_prompted_response, prompted_request
from agents.models.retry import Failure, RetryPolicy, classify

logger = logging.getLogger(__name__)

ToolMode = Literal["native", "prompted", "auto"]

_litellm: Any = None

for _name, _help in (
    ("support_bot_model_retries_total", "Model call retries, by agent and reason"),
    ("support_bot_model_errors_total", "Model calls that failed after retries, by agent and code"),
):
    REGISTRY.describe(_name, "counter", _help)


def load_litellm() -> Any:
    """Import litellm once, configured to stay quiet and offline about its cost map."""
    global _litellm
    if _litellm is None:
        # Without this litellm fetches its price list from the internet on import.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        # Otherwise litellm prints help banners on stdout for every failed call.
        litellm.suppress_debug_info = True
        _litellm = litellm
    return _litellm


async def preload_litellm() -> None:
    """Import litellm in a worker thread so no model call pays for it."""
    if _litellm is None:
        await asyncio.to_thread(load_litellm)


class LiteLlmModel:
    """A `Model` backed by `litellm.acompletion` (any provider, or an OpenAI-compatible server).

    `model` is a litellm model string, e.g. `"openai/gpt-4o-mini"`, or `"openai/<alias>"`
    with `api_base="http://127.0.0.1:PORT/v1"` for a local server. Transient failures
    (timeouts, 429, 5xx, connection errors) and malformed tool calls are retried up to
    `max_retries` times with exponential backoff and jitter, honouring `Retry-After`; then
    `ModelError` is raised with a `code`: `model_timeout`, `rate_limited`,
    `model_unavailable` or `malformed_tool_call`. Other failures raise at once
    (`model_bad_request`, `model_auth_failed`, `model_not_found`,
    `context_window_exceeded`, `model_error`).

    `tool_mode` chooses how tools reach the model: `"native"` OpenAI tool calls,
    `"prompted"` (tools described in the prompt, answers in JSON; see
    `agents.models.prompted_tools`), or `"auto"`: native when
    `litellm.supports_function_calling` says so, prompted otherwise (the safe choice for
    models litellm does not know). `decision` chooses how an agent step with tools uses
    the model (see `agents.llm.decide_first`): `"decide-first"` (a constrained choice,
    then the reply or the tool's arguments), `"one-call"` (answer or call a tool in one
    call), or `"auto"`: decide first exactly when tools go out prompted. `choice_scoring`
    says how such a decision is read (`agents.llm.decide_first.choice_scores`): the
    greedy answer, or the options' log-probabilities, raw or calibrated;
    `decision_layouts` how it is laid out (`agents.llm.decide_first.function_layout`):
    several are each asked and read together. These settings make the model's `profile`
    (`agents.models.profile`), checked here. `extra` is passed to every `acompletion`
    call as is.
    The API key is never logged, nor shown in `repr`.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        tool_mode: ToolMode = "native",
        decision: ToolDecision = "auto",
        choice_scoring: ChoiceScoring = "greedy",
        decision_layouts: Sequence[DecisionLayout] = ("question",),
        extra: dict[str, Any] | None = None,
    ) -> None:
        if tool_mode not in ("native", "prompted", "auto"):
            raise ValueError(f"tool_mode must be native, prompted or auto, not {tool_mode!r}")
        # Checked now whatever the tool mode; under `auto`, native tool calling is settled
        # on first use (`profile`).
        self._profile = ModelProfile.for_tool_decision(
            decision,
            native_tools=tool_mode != "prompted",
            choice_scoring=choice_scoring,
            decision_layouts=tuple(decision_layouts),
        )
        self._profile_settled = tool_mode != "auto"
        self._decision: ToolDecision = decision
        self.name = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = timeout
        self.retry_policy = RetryPolicy(max_retries, backoff_base, backoff_max)
        self.tool_mode: ToolMode = tool_mode
        self.extra = dict(extra or {})
        self._response_format_ok = True

    def __repr__(self) -> str:
        return (
            f"LiteLlmModel({self.name!r}, api_base={self.api_base!r}, tool_mode={self.tool_mode!r})"
        )

    async def generate(self, request: LlmRequest) -> LlmResponse:
        """Answer one request; usage and cost are summed over every attempt that answered."""
        if _litellm is None:
            await preload_litellm()
        litellm = load_litellm()
        agent = request.agent_name or "unknown"
        prompted = bool(request.tools) and not self.profile.native_tools
        wire = prompted_request(request) if prompted else request
        try:
            return await self._call(litellm, self.request_params(wire), prompted, agent)
        except ModelError as exc:
            # Calls, tokens and cost are counted by the runner from the response event;
            # what it cannot see is counted here.
            REGISTRY.inc("support_bot_model_errors_total", agent=agent, code=exc.code)
            raise

    async def generate_stream(self, request: LlmRequest) -> AsyncIterator[LlmResponse]:
        """`generate`, streamed: text deltas, then the complete response
        (`agents.models.litellm_stream`). Requests whose answer is JSON (prompted tools,
        a response schema) come whole."""
        if _litellm is None:
            await preload_litellm()
        litellm = load_litellm()
        prompted = bool(request.tools) and not self.profile.native_tools
        if prompted or request.response_schema is not None:
            yield await self.generate(request)
            return
        async for response in stream_completion(self, litellm, request):
            yield response

    @property
    def profile(self) -> ModelProfile:
        """What this model can do and how agent steps use it, from `tool_mode`,
        `decision`, `choice_scoring` and `decision_layouts`. Under `tool_mode="auto"`
        native tool calling is what `litellm.supports_function_calling` says (litellm is
        loaded for that on first use)."""
        if not self._profile_settled:
            self._profile = ModelProfile.for_tool_decision(
                self._decision,
                native_tools=self._supports_function_calling(load_litellm()),
                choice_scoring=self._profile.choice_scoring,
                decision_layouts=self._profile.decision_layouts,
            )
            self._profile_settled = True
        return self._profile

    def _supports_function_calling(self, litellm: Any) -> bool:
        try:
            return bool(litellm.supports_function_calling(model=self.name))
        except Exception:  # litellm raises for models it has never heard of
            return False

    def request_params(self, request: LlmRequest) -> dict[str, Any]:
        """`acompletion`'s keyword arguments for `request`."""
        params = to_openai_params(request)
        if not self._response_format_ok and "response_format" in params:
            params = _schema_in_prompt(params)
        params.update(model=self.name, timeout=self.timeout, max_retries=0)
        if self.api_base:
            params["api_base"] = self.api_base
        if self._api_key:
            params["api_key"] = self._api_key
        extra_body = params.get("extra_body")
        params.update(self.extra)
        if extra_body and "extra_body" in self.extra:
            params["extra_body"] = {**extra_body, **self.extra["extra_body"]}
        return params

    async def _call(
        self, litellm: Any, params: dict[str, Any], prompted: bool, agent: str
    ) -> LlmResponse:
        usage = Usage()
        retry = 0
        # litellm enforces `timeout` itself; this guard only stops a call that hangs anyway.
        guard = self.timeout * 1.5 + 1.0
        while True:
            try:
                raw = await asyncio.wait_for(litellm.acompletion(**params), guard)
            except Exception as exc:
                failure = classify(exc)
                if self._drops_response_format(failure, params):
                    params = _schema_in_prompt(params)
                    continue
                policy = self.retry_policy
                if (
                    not failure.transient
                    or retry >= policy.max_retries
                    or not policy.worth_waiting(failure.retry_after)
                ):
                    raise ModelError(self.describe(failure, retry), code=failure.code) from exc
                delay = policy.delay(retry, failure.retry_after)
                self.log_retry(agent, failure.code, failure.message, retry, delay)
                retry += 1
                await asyncio.sleep(delay)
                continue
            usage = usage + self.usage_of(litellm, raw)
            try:
                response = from_openai_response(raw)
                if prompted:
                    response = parse_prompted_response(response)
            except MalformedToolCall as exc:
                if retry >= self.retry_policy.max_retries:
                    message = f"{self.name}: malformed tool call after {retry + 1} attempts: {exc}"
                    raise ModelError(self._redact(message), code="malformed_tool_call") from exc
                self.log_retry(agent, "malformed_tool_call", str(exc), retry, 0.0)
                retry += 1
                if prompted:
                    params = _with_correction(params, _answer_text(raw), str(exc))
                continue
            return response.model_copy(update={"usage": usage, "model": self.name})

    def _drops_response_format(self, failure: Failure, params: dict[str, Any]) -> bool:
        """True once, when a server rejects `response_format`: later calls go without it."""
        if failure.code != "model_bad_request" or "response_format" not in params:
            return False
        text = failure.message.lower()
        if "response_format" not in text and "json_schema" not in text:
            return False
        logger.warning(
            "model %s rejects response_format; sending the schema in the prompt", self.name
        )
        self._response_format_ok = False
        return True

    def usage_of(self, litellm: Any, raw: Any) -> Usage:
        """Tokens and cost of one answered call."""
        tokens = usage_from_openai(as_dict(raw)) or Usage()
        try:
            cost = float(litellm.completion_cost(completion_response=raw) or 0.0)
        except Exception:  # litellm raises for models missing from its price list
            cost = 0.0
        return Usage(
            prompt_tokens=tokens.prompt_tokens,
            completion_tokens=tokens.completion_tokens,
            cost=cost,
        )

    def describe(self, failure: Failure, retry: int) -> str:
        """A failed call's message (the API key redacted)."""
        status = f" (HTTP {failure.status})" if failure.status else ""
        return self._redact(
            f"{self.name}: {failure.code}{status} after {retry + 1} attempts: {failure.message}"
        )

    def log_retry(self, agent: str, code: str, message: str, retry: int, delay: float) -> None:
        """Count and log one retry."""
        REGISTRY.inc("support_bot_model_retries_total", agent=agent, reason=code)
        logger.warning(
            "model call failed, retrying: model=%s agent=%s code=%s retry=%d/%d delay=%.2fs %s",
            self.name,
            agent,
            code,
            retry + 1,
            self.retry_policy.max_retries,
            delay,
            self._redact(message[:300]),
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text


def _answer_text(raw: Any) -> str:
    """The answer's text, for a correction prompt, even if its tool calls are malformed."""
    try:
        choice = as_dict(as_dict(raw)["choices"][0])
        return str(as_dict(choice.get("message") or {}).get("content") or "")
    except (KeyError, IndexError, TypeError):
        return ""


def _with_correction(params: dict[str, Any], answer: str, problem: str) -> dict[str, Any]:
    """The same call, with the bad answer and what was wrong with it appended."""
    correction = (
        f"Your answer could not be used: {problem}. Answer again with exactly one JSON "
        'object: {"reply": ...} or {"tool": "<tool name>", "args": {...}}.'
    )
    messages = [
        *params["messages"],
        {"role": "assistant", "content": answer},
        {"role": "user", "content": correction},
    ]
    return {**params, "messages": messages}


def _schema_in_prompt(params: dict[str, Any]) -> dict[str, Any]:
    """The same call without `response_format`; the schema goes into a system message."""
    params = dict(params)
    response_format = params.pop("response_format")
    schema = response_format.get("json_schema", {}).get("schema", {})
    note = f"Answer with JSON matching this schema: {dump_json(schema)}"
    messages = list(params["messages"])
    # Appended to the leading system message: many chat templates allow no other.
    if messages and messages[0]["role"] == "system":
        messages[0] = {**messages[0], "content": f"{messages[0]['content']}\n\n{note}"}
    else:
        messages.insert(0, {"role": "system", "content": note})
    params["messages"] = messages
    return params
