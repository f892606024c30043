"""LlmAgent: a model-driven node that answers, calls tools, or transfers."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from agents.base_agent import BaseAgent
from agents.callbacks import (
    AfterModelCallback,
    AfterToolCallback,
    AgentCallback,
    BeforeModelCallback,
    BeforeToolCallback,
    CallbackContext,
    as_list,
    first_result,
)
from agents.context import InvocationContext, ReadonlyContext, ToolContext
from agents.errors import AgentRuntimeError
from agents.events import Event, EventActions, FunctionCall, FunctionResponse, Part
from agents.history import build_contents, current_turn_contents
from agents.llm.decide_first import respond, step_options
from agents.llm.grounding import Grounding, ground
from agents.llm.instructions import inject_state
from agents.llm.streaming import TextSink, call_streaming, streams, with_partials
from agents.llm.transfer import TRANSFER_TOOL, transfer_declaration, transfer_instruction
from agents.models.base import GenerateConfig, LlmRequest, LlmResponse, Model
from agents.tools.base_tool import BaseTool, ToolError
from agents.tools.function_tool import FunctionTool
from agents.tools.results import json_result, result_text

InstructionProvider = Callable[[ReadonlyContext], "str | Awaitable[str]"]
ToolLike = BaseTool | Callable[..., Any]


class LlmAgent(BaseAgent):
    """An agent whose every step is a model call.

    Each step sends the instruction (templated from state), the visible history and the
    tool declarations. A text answer ends the agent's turn; function calls run and the
    agent steps again; a `transfer_to_agent` call hands the rest of the invocation to the
    target. `output_key` stores this agent's own final text (or validated object).
    """

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        model: Model | str | None = None,
        instruction: str | InstructionProvider = "",
        tools: Sequence[ToolLike] = (),
        sub_agents: Sequence[BaseAgent] = (),
        output_key: str | None = None,
        output_schema: type[BaseModel] | None = None,
        include_contents: Literal["default", "none"] = "default",
        disallow_transfer_to_parent: bool = False,
        disallow_transfer_to_peers: bool = False,
        generate_config: GenerateConfig | None = None,
        before_agent_callback: AgentCallback | Sequence[AgentCallback] | None = None,
        after_agent_callback: AgentCallback | Sequence[AgentCallback] | None = None,
        before_model_callback: BeforeModelCallback | Sequence[BeforeModelCallback] | None = None,
        after_model_callback: AfterModelCallback | Sequence[AfterModelCallback] | None = None,
        before_tool_callback: BeforeToolCallback | Sequence[BeforeToolCallback] | None = None,
        after_tool_callback: AfterToolCallback | Sequence[AfterToolCallback] | None = None,
    ) -> None:
        super().__init__(
            name=name,
            description=description,
            sub_agents=sub_agents,
            before_agent_callback=before_agent_callback,
            after_agent_callback=after_agent_callback,
        )
        self.model = model
        self.instruction = instruction
        self.tools: list[BaseTool] = [
            t if isinstance(t, BaseTool) else FunctionTool(t) for t in tools
        ]
        self.output_key = output_key
        self.output_schema = output_schema
        self.include_contents = include_contents
        self.disallow_transfer_to_parent = disallow_transfer_to_parent
        self.disallow_transfer_to_peers = disallow_transfer_to_peers
        self.generate_config = generate_config or GenerateConfig()
        self.before_model_callback: list[BeforeModelCallback] = as_list(before_model_callback)
        self.after_model_callback: list[AfterModelCallback] = as_list(after_model_callback)
        self.before_tool_callback: list[BeforeToolCallback] = as_list(before_tool_callback)
        self.after_tool_callback: list[AfterToolCallback] = as_list(after_tool_callback)
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names) or TRANSFER_TOOL in names:
            raise ValueError(f"agent {name!r} has duplicate or reserved tool names: {names}")

    def transfer_targets(self) -> list[BaseAgent]:
        """Sub-agents always; parent and peers only under an LLM parent, unless disallowed."""
        targets: list[BaseAgent] = list(self.sub_agents)
        parent = self.parent
        if not isinstance(parent, LlmAgent):
            return targets
        if not self.disallow_transfer_to_parent:
            targets.append(parent)
        if not self.disallow_transfer_to_peers:
            targets.extend(peer for peer in parent.sub_agents if peer is not self)
        return targets

    def resolve_model(self, ctx: InvocationContext) -> Model:
        """This agent's model, else the nearest LLM ancestor's, else the runner's default."""
        agent: BaseAgent | None = self
        while agent is not None:
            model = getattr(agent, "model", None)
            if isinstance(model, str):
                if ctx.model_factory is None:
                    raise AgentRuntimeError(f"no model factory to resolve {model!r}")
                return ctx.model_factory(model)
            if model is not None:
                return model
            agent = agent.parent
        if ctx.default_model is None:
            raise AgentRuntimeError(f"agent {self.name!r} has no model", agent_name=self.name)
        return ctx.default_model

    async def _instruction(self, ctx: InvocationContext) -> str:
        if callable(self.instruction):
            text = self.instruction(ReadonlyContext(ctx))
            return await text if inspect.isawaitable(text) else text
        return inject_state(self.instruction, ctx.state_view(), agent_name=self.name)

    async def build_request(self, ctx: InvocationContext, model: Model) -> LlmRequest:
        targets = self.transfer_targets()
        system = [await self._instruction(ctx)]
        tools = [t.declaration() for t in self.tools]
        if targets:
            system.append(transfer_instruction(self.parent, targets))
            tools.append(transfer_declaration(targets))
        if self.include_contents == "none":
            contents = current_turn_contents(
                ctx.session.events,
                agent_name=self.name,
                branch=ctx.branch,
                invocation_id=ctx.invocation_id,
                max_message_chars=ctx.max_message_chars,
            )
        else:
            contents = build_contents(
                ctx.session.events,
                agent_name=self.name,
                branch=ctx.branch,
                max_message_chars=ctx.max_message_chars,
                cache=ctx.contents,
            )
        return LlmRequest(
            model=model.name,
            agent_name=self.name,
            system_instruction="\n\n".join(s for s in system if s),
            contents=contents,
            tools=tools,
            config=self.generate_config,
            response_schema=self.output_schema.model_json_schema() if self.output_schema else None,
        )

    # -- run -------------------------------------------------------------------

    async def _run_impl(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        prefetched: Grounding | None = None
        while True:
            model = self.resolve_model(ctx)
            # Knowledge and the reply's check: agents.llm.grounding. Sections retrieved
            # before a step serve this run's later steps too: the question is the same.
            grounding = prefetched or await ground(self.tools, ctx, model.profile, self.name)
            prefetched = grounding if grounding.reusable else None
            last: Event | None = None
            transfer_to: str | None = None
            async for event in self._step(ctx, model, grounding):
                last = event
                transfer_to = event.actions.transfer_to_agent or transfer_to
                yield event
            if transfer_to:
                target = self.root_agent.find_agent(transfer_to)
                if target is not None:
                    async for event in target.run_async(ctx):
                        yield event
                return
            if last is None or last.is_final_response() or ctx.end_invocation:
                return

    async def _step(
        self, ctx: InvocationContext, model: Model, grounding: Grounding
    ) -> AsyncIterator[Event]:
        # Decide-first models and the pretend-action check: agents.llm.decide_first. Each
        # model call: `_call_model`.
        request, options = grounding.instruct(
            await self.build_request(ctx, model),
            step_options(self, ctx, await self._instruction(ctx)),
        )
        if streams(ctx, model) and not grounding.active:
            response: LlmResponse | None = None

            def work(on_text: TextSink) -> Awaitable[LlmResponse]:
                # A reply checked once written streams only what its check cannot take back.
                sink = grounding.gate(on_text)

                def generate(step_request: LlmRequest) -> Awaitable[LlmResponse]:
                    return self._call_model(ctx, model, step_request, sink)

                return respond(model.profile, request, options, generate=generate)

            async for item in with_partials(ctx, self.name, work):
                if isinstance(item, LlmResponse):
                    response = item
                else:
                    yield item
            assert response is not None
        else:
            response = await respond(
                model.profile,
                request,
                options,
                generate=lambda step_request: self._call_model(ctx, model, step_request),
            )
        response, metadata = await grounding.settle(
            self.name, response, ctx.session.events, request, options.instruction,
            rewrite=lambda again: self._call_model(ctx, model, again),
        )  # fmt: skip
        parts = response.parts or (Part(text=""),)
        event = Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            branch=ctx.branch,
            parts=parts,
            usage=response.usage,
            model=response.model or model.name,
            finish_reason=response.finish_reason,
            error_code=response.error_code,
            error_message=response.error_message,
            custom_metadata=metadata,
        )
        if not event.function_calls:
            event = self._with_output(event)
            yield event
            return
        yield event
        response_event, final_text = await self._run_tools(ctx, event.function_calls)
        yield response_event
        if final_text is not None:
            yield Event(
                invocation_id=ctx.invocation_id,
                author=self.name,
                branch=ctx.branch,
                parts=(Part(text=final_text),),
                actions=EventActions(skip_summarization=True),
            )

    async def _call_model(
        self,
        ctx: InvocationContext,
        model: Model,
        request: LlmRequest,
        on_text: TextSink | None = None,
    ) -> LlmResponse:
        """One model call between the model callbacks; a blocked call spends no budget.
        With `on_text`, the call streams its text deltas there (`agents.llm.streaming`)."""
        hooked = ctx.plugins or self.before_model_callback or self.after_model_callback
        if hooked:
            callback_context = CallbackContext(ctx)
            blocked = await first_result(
                [p.before_model for p in ctx.plugins],
                self.before_model_callback,
                callback_context,
                request,
            )
            if blocked is not None:
                return blocked  # type: ignore[no-any-return]
        ctx.budget.spend(self.name)
        if on_text is None:
            response = await model.generate(request)
        else:
            response = await call_streaming(model, request, on_text)
        if hooked:
            replaced = await first_result(
                [p.after_model for p in ctx.plugins],
                self.after_model_callback,
                callback_context,
                response,
            )
            response = replaced or response
        return response

    def _with_output(self, event: Event) -> Event:
        """Store this agent's own final answer under `output_key`, validated if a schema is set."""
        if self.output_schema is not None:
            try:
                value: Any = self.output_schema.model_validate(json.loads(event.text)).model_dump(
                    mode="json"
                )
            except (json.JSONDecodeError, ValidationError) as exc:
                return event.model_copy(
                    update={"error_code": "invalid_output", "error_message": str(exc)[:2000]}
                )
        else:
            value = event.text
        if not self.output_key:
            return event
        actions = event.actions.model_copy(update={"state_delta": {self.output_key: value}})
        return event.model_copy(update={"actions": actions})

    async def _run_tools(
        self, ctx: InvocationContext, calls: list[FunctionCall]
    ) -> tuple[Event, str | None]:
        contexts = [ToolContext(ctx, call.id) for call in calls]
        results = await asyncio.gather(
            *(self._run_tool(ctx, call, tc) for call, tc in zip(calls, contexts, strict=True))
        )
        delta: dict[str, Any] = {}
        escalate = skip = False
        transfer: str | None = None
        for tc in contexts:
            delta.update(tc.state.delta)
            escalate = escalate or tc.actions.escalate
            skip = skip or tc.actions.skip_summarization
            transfer = tc.actions.transfer_to_agent or transfer
        parts = tuple(
            Part(
                function_response=FunctionResponse(
                    id=call.id, name=call.name, response=result, model_use=tc.actions.model_use
                )
            )
            for call, result, tc in zip(calls, results, contexts, strict=True)
        )
        event = Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            branch=ctx.branch,
            parts=parts,
            actions=EventActions(state_delta=delta, escalate=escalate, transfer_to_agent=transfer),
        )
        final_text = None
        if skip and transfer is None:
            final_text = "\n".join(result_text(r) for r in results)
        return event, final_text

    async def _run_tool(
        self, ctx: InvocationContext, call: FunctionCall, tool_context: ToolContext
    ) -> dict[str, Any]:
        if call.name == TRANSFER_TOOL:
            return self._transfer(call, tool_context)
        tool = next((t for t in self.tools if t.name == call.name), None)
        if tool is None:
            return {
                "error": f"unknown tool {call.name!r}; available: {[t.name for t in self.tools]}"
            }
        args = dict(call.args)
        plugins = tool_context.invocation_context.plugins
        hooked = plugins or self.before_tool_callback or self.after_tool_callback
        canned = None
        if hooked:
            canned = await first_result(
                [p.before_tool for p in plugins],
                self.before_tool_callback,
                tool,
                args,
                tool_context,
            )
        if canned is not None:
            result = json_result(call.name, canned)
        else:
            try:
                result = json_result(
                    call.name, await tool.run(args=args, tool_context=tool_context)
                )
            except AgentRuntimeError:
                raise
            except ToolError as exc:
                return {"error": str(exc)}
            except Exception as exc:
                return {"error": f"tool {call.name} failed: {type(exc).__name__}: {exc}"}
        if hooked:
            replaced = await first_result(
                [p.after_tool for p in plugins],
                self.after_tool_callback,
                tool,
                args,
                tool_context,
                result,
            )
            if replaced is not None:
                result = json_result(call.name, replaced)
        return result

    def _transfer(self, call: FunctionCall, tool_context: ToolContext) -> dict[str, Any]:
        allowed = [t.name for t in self.transfer_targets()]
        name = call.args.get("agent_name")
        if name not in allowed:
            return {"error": f"cannot transfer to {name!r}; allowed agents: {allowed}"}
        tool_context.actions.transfer_to_agent = name
        return {"result": f"transferred to {name}"}
