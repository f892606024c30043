"""Named errors for the runtime's bounds and configuration mistakes."""

from __future__ import annotations


class AgentRuntimeError(Exception):
    """Base of errors that end an invocation with a clear final event instead of a crash.

    `code` becomes the final event's `error_code`; `user_message` its text.
    """

    code = "runtime_error"
    user_message = "Something went wrong while working on this. The message is saved."

    def __init__(self, message: str, *, agent_name: str | None = None) -> None:
        super().__init__(message)
        self.agent_name = agent_name


class ModelCallLimitExceeded(AgentRuntimeError):
    """The invocation used its whole budget of model calls (a transfer ping-pong, say)."""

    code = "model_call_limit"
    user_message = (
        "I stopped because this request took too many steps without an answer. "
        "The message is saved and a person will follow up."
    )

    def __init__(self, limit: int, *, agent_name: str | None = None) -> None:
        super().__init__(f"model call limit of {limit} reached", agent_name=agent_name)
        self.limit = limit


class InstructionTemplateError(AgentRuntimeError):
    """An instruction names a required `{key}` that the session state does not have."""

    code = "instruction_template"
    user_message = "This assistant is misconfigured (a required setting is missing)."

    def __init__(self, key: str, *, agent_name: str | None = None) -> None:
        super().__init__(
            f"instruction of agent {agent_name!r} needs state key {key!r}, which is not set",
            agent_name=agent_name,
        )
        self.key = key


class AgentTreeError(ValueError):
    """The agent tree is malformed: a second parent, a duplicate name, an unknown reference."""


class SessionStoreError(RuntimeError):
    """The session store failed (a database, say): the invocation cannot go on.

    The runner lets these escape instead of turning them into a final event, because
    that event could not be stored either; the caller tells the person the turn failed.
    """
