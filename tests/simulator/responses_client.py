"""Responses API requests through the real OpenAI client: input, streams, refusals."""

from __future__ import annotations

from typing import Any

import openai
from openai.types.responses import Response, ResponseStreamEvent
import pytest

MODEL = "gpt-4o-mini"


REASONING_MODEL = "gpt-5-mini"


def user(text: str) -> list[dict[str, Any]]:
    """Return input with one user message."""
    return [{"role": "user", "content": text}]


async def collect(
    client: openai.AsyncOpenAI, **kwargs: Any
) -> list[ResponseStreamEvent]:
    """Stream a response and return its events."""
    kwargs.setdefault("model", MODEL)
    stream = await client.responses.create(stream=True, **kwargs)
    return [event async for event in stream]


def completed(events: list[ResponseStreamEvent]) -> Response:
    """Return the response of the stream's last event."""
    last = events[-1]
    assert last.type == "response.completed"
    return last.response


async def rejected(client: openai.AsyncOpenAI, **kwargs: Any) -> openai.APIStatusError:
    """Send a request that must be refused; return the error."""
    kwargs.setdefault("model", MODEL)
    with pytest.raises(openai.APIStatusError) as caught:
        await client.responses.create(**kwargs)
    return caught.value
