"""AgentTool: consult an agent like a function and keep control of the conversation."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.base_agent import BaseAgent
from agents.context import InvocationContext, ToolContext
from agents.events import Event, Part, new_invocation_id
from agents.invocation_log import InvocationLog
from agents.metrics import event_model_use
from agents.models.base import ToolDeclaration
from agents.sessions.service import InMemorySessionService
from agents.sessions.state import TEMP_PREFIX
from agents.tools.base_tool import BaseTool, ToolError


class AgentTool(BaseTool):
    """Runs `agent` in a temporary session and returns its final answer.

    The child starts from a copy of the caller's state and one request message, and sees
    none of the conversation. Its state writes are merged back into the caller's state,
    except `temp:` keys. Its intermediate events stay out of the caller's log. With an
    output schema the result is the validated object; otherwise `{"result": text}`. With
    `skip_summarization` the child's answer ends the caller's turn directly.
    `consult_before` describes the replies that need this agent's answer first (see
    `ToolDeclaration.consult_before`). The child's model calls, tokens and cost ride on
    the caller's function response (`FunctionResponse.model_use`), so `/metrics` and
    `support-bot stats` count them under the child's own name. With an `input_schema`
    (ADK's `input_schema`), the caller's model is offered that schema's fields instead of
    one `request` string; the arguments are validated against it (a mismatch goes back to
    the model as a tool error) and the child's request message is them as JSON.
    """

    def __init__(
        self,
        agent: BaseAgent,
        *,
        skip_summarization: bool = False,
        consult_before: str = "",
        input_schema: type[BaseModel] | None = None,
    ) -> None:
        if agent.parent is not None:
            raise ValueError(f"agent {agent.name!r} is in a tree; give AgentTool its own instance")
        self.agent = agent
        self.name = agent.name
        self.description = agent.description
        self.skip_summarization = skip_summarization
        self.consult_before = consult_before
        self.input_schema = input_schema

    def declaration(self) -> ToolDeclaration:
        parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "request": {
                    "type": "string",
                    "description": "Everything the agent needs: it cannot see the chat.",
                }
            },
            "required": ["request"],
        }
        if self.input_schema is not None:
            parameters = self.input_schema.model_json_schema()
        return ToolDeclaration(
            name=self.name,
            description=self.description,
            consult_before=self.consult_before,
            parameters=parameters,
        )

    def request_text(self, args: dict[str, Any]) -> str:
        """The child's one request message from the caller's `args` (validated against
        `input_schema` when there is one); a `ToolError` the model can fix otherwise."""
        if self.input_schema is not None:
            try:
                value = self.input_schema.model_validate(args)
            except ValidationError as exc:
                raise ToolError(
                    f"{self.name} arguments do not match its input schema: {exc}"
                ) from exc
            return json.dumps(value.model_dump(mode="json"), ensure_ascii=False)
        request = args.get("request")
        if not isinstance(request, str) or not request.strip():
            raise ToolError(f"{self.name} needs a non-empty 'request' string")
        return request

    async def run(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        from agents.invocation import record_event, run_and_persist

        request = self.request_text(args)
        caller: InvocationContext = tool_context.invocation_context
        service = InMemorySessionService()
        state = caller.state_view().to_dict()
        session = await service.create_session(
            app_name=f"{caller.app_name}.agent_tool",
            user_id=caller.user_id,
            state={k: v for k, v in state.items() if not k.startswith(TEMP_PREFIX)},
        )
        invocation_id = new_invocation_id()
        user_event = await service.append_event(
            session,
            Event(author="user", invocation_id=invocation_id, parts=(Part(text=request),)),
        )
        # The consulted agent's run is an invocation of its own, logged as the caller's child.
        log = InvocationLog(invocation_id, session.id, parent_invocation_id=caller.invocation_id)
        ctx = InvocationContext(
            session_service=service,
            session=session,
            invocation_id=invocation_id,
            agent=self.agent,
            user_event=user_event,
            budget=caller.budget,
            default_model=caller.default_model,
            model_factory=caller.model_factory,
            temp_state={k: v for k, v in state.items() if k.startswith(TEMP_PREFIX)},
            plugins=caller.plugins,
            custom_metadata=caller.custom_metadata,
            max_message_chars=caller.max_message_chars,
            contents=caller.contents,
            invocation_log=log,
        )
        record_event(ctx, user_event)
        final: Event | None = None
        outcome = "raised"
        try:
            async for event in run_and_persist(self.agent, ctx):
                # The child's events never reach the caller's log: what its calls used
                # rides on the caller's function response, even if the child fails.
                spent = tool_context.actions.model_use
                for agent, usage in event_model_use(event).items():
                    spent[agent] = spent[agent] + usage if agent in spent else usage
                for key, value in event.actions.state_delta.items():
                    if not key.startswith(TEMP_PREFIX):
                        tool_context.state[key] = value
                if event.is_final_response() and event.text:
                    final = event
            outcome = "completed"
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            log.finish(outcome)
            await service.delete_session(
                app_name=session.app_name, user_id=session.user_id, session_id=session.id
            )
        if final is None:
            raise ToolError(f"{self.name} finished without an answer")
        if self.skip_summarization:
            tool_context.actions.skip_summarization = True
        schema = getattr(self.agent, "output_schema", None)
        if schema is not None:
            return _validated(final.text, schema, self.name)
        return {"result": final.text}


def _validated(text: str, schema: type[BaseModel], name: str) -> dict[str, Any]:
    try:
        return schema.model_validate(json.loads(text)).model_dump(mode="json")
    except (json.JSONDecodeError, ValidationError) as exc:
        raise ToolError(f"{name} returned output that does not match its schema: {exc}") from exc
