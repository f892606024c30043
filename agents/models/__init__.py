"""Model adapters: the `Model` protocol and its `ModelProfile`, litellm, and a scripted model
for tests."""

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
from agents.models.profile import ModelProfile
from agents.models.scripted import ScriptedModel, UnexpectedModelCall

__all__ = [
    "Content",
    "GenerateConfig",
    "LlmRequest",
    "LlmResponse",
    "Model",
    "ModelError",
    "ModelProfile",
    "ScriptedModel",
    "StreamingModel",
    "ToolDeclaration",
    "UnexpectedModelCall",
]
