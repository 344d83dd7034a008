"""Chat requests through the real OpenAI client: a conversation, a stream."""

from __future__ import annotations

from typing import Any

import openai

MODEL = "gpt-4o-mini"


def user(text: str) -> list[dict[str, Any]]:
    """Return a one-message conversation."""
    return [{"role": "user", "content": text}]


async def collect(
    client: openai.AsyncOpenAI, **kwargs: Any
) -> list[openai.types.chat.ChatCompletionChunk]:
    """Stream a completion and return all chunks."""
    stream = await client.chat.completions.create(model=MODEL, stream=True, **kwargs)
    return [part async for part in stream]


def streamed_text(chunks: list[openai.types.chat.ChatCompletionChunk]) -> str:
    """Join the content of streamed chunks."""
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
