"""Fixtures: a running simulator and the real OpenAI client pointed at it."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import openai
import pytest

from simulator import OpenAISimulator
from tests.conftest import served


@pytest.fixture
async def sim(socket_enabled: None) -> AsyncGenerator[OpenAISimulator]:
    """Serve a fresh simulator on a free localhost port.

    A test fails when answers it queued with `enqueue` were never used.
    """
    async with served(OpenAISimulator()) as server:
        yield server


@pytest.fixture
async def client(sim: OpenAISimulator) -> AsyncGenerator[openai.AsyncOpenAI]:
    """Return the real client, without retries, talking to the simulator."""
    async with openai.AsyncOpenAI(
        base_url=sim.base_url, api_key="sk-test", max_retries=0
    ) as api:
        yield api
