"""Model adapters: the `Model` protocol, litellm, and a scripted model for tests."""

from agents.models.base import (
    Content,
    GenerateConfig,
    LlmRequest,
    LlmResponse,
    Model,
    ModelError,
    StreamingModel,
    ToolDeclaration,
)
from agents.models.scripted import ScriptedModel, UnexpectedModelCall

__all__ = [
    "Content",
    "GenerateConfig",
    "LlmRequest",
    "LlmResponse",
    "Model",
    "ModelError",
    "ScriptedModel",
    "StreamingModel",
    "ToolDeclaration",
    "UnexpectedModelCall",
]
