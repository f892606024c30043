"""A fresh fake OpenAI-compatible server per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes import FakeOpenAIServer


@pytest.fixture
async def openai_server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server
