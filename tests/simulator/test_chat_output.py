"""Chat answers on the wire: streamed chunks, usage, reasoning fields, helpers."""

from __future__ import annotations

import openai
import pytest

from simulator import OpenAISimulator, chunk, sse_text, sse_tool_calls
from tests.simulator.chat_client import MODEL, collect, streamed_text, user


async def test_echo_streamed_with_usage(client: openai.AsyncOpenAI) -> None:
    """A stream carries the text in pieces and ends with a usage chunk."""
    chunks = await collect(
        client,
        messages=user("Hello there"),
        stream_options={"include_usage": True},
    )

    assert chunks[0].choices[0].delta.role == "assistant"
    assert streamed_text(chunks) == "You said: Hello there"
    assert len(chunks) > 4
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens > 0


async def test_stream_usage_only_when_asked_and_supported(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """No usage chunk unless asked; servers that never send one are simulated."""
    plain = await collect(client, messages=user("hi"))
    assert all(c.usage is None for c in plain)

    sim.settings.stream_usage = False
    asked = await collect(
        client, messages=user("hi"), stream_options={"include_usage": True}
    )
    assert all(c.usage is None for c in asked)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_fields(
    sim: OpenAISimulator, client: openai.AsyncOpenAI, field: str
) -> None:
    """Reasoning arrives in the configured field before the answer."""
    sim.settings.reasoning = field  # type: ignore[assignment]

    chunks = await collect(client, messages=user("hi"))
    answer = await client.chat.completions.create(model=MODEL, messages=user("hi"))

    thinking = "".join(
        (c.choices[0].delta.model_extra or {}).get(field) or ""
        for c in chunks
        if c.choices
    )
    assert thinking == "The user wrote 1 words. I will answer briefly."
    assert streamed_text(chunks) == "You said: hi"
    first_text = next(
        i for i, c in enumerate(chunks) if c.choices and c.choices[0].delta.content
    )
    first_thought = next(
        i
        for i, c in enumerate(chunks)
        if c.choices and (c.choices[0].delta.model_extra or {}).get(field)
    )
    assert first_thought < first_text
    assert (answer.choices[0].message.model_extra or {})[field] == thinking


async def test_reasoning_think_tags(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Think-tag servers put the reasoning inline in the content."""
    sim.settings.reasoning = "think_tags"

    text = streamed_text(await collect(client, messages=user("hi")))

    assert text == (
        "<think>\nThe user wrote 1 words. I will answer briefly.\n</think>\n\n"
        "You said: hi"
    )


async def test_helpers_build_wire_chunks(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """sse_text and sse_tool_calls make streams the client parses."""
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    sim.enqueue(
        "/chat/completions",
        sse=sse_text(
            "Hello world",
            split=3,
            reasoning="hmm",
            reasoning_field="reasoning",
            usage=usage,
        ),
    )
    sim.enqueue(
        "/chat/completions",
        sse=sse_tool_calls(
            [
                ("call_a", "first", {"x": 1}),
                ("call_b", "second", '{"y": 2}'),
                ("call_c", "third", None),
            ],
            text="On it.",
        ),
    )

    text_chunks = await collect(client, messages=user("hi"))
    call_chunks = await collect(client, messages=user("hi"))

    assert streamed_text(text_chunks) == "Hello world"
    assert text_chunks[-1].usage is not None and text_chunks[-1].usage.total_tokens == 5
    assert streamed_text(call_chunks) == "On it."
    calls: dict[int, list[str]] = {}
    for c in call_chunks:
        for fragment in (c.choices[0].delta.tool_calls or ()) if c.choices else ():
            calls.setdefault(fragment.index, []).append(
                fragment.function.arguments or "" if fragment.function else ""
            )
    assert {i: "".join(parts) for i, parts in calls.items()} == {
        0: '{"x": 1}',
        1: '{"y": 2}',
        2: "",
    }
    assert call_chunks[-1].choices[0].finish_reason == "tool_calls"
    assert chunk(None, usage=usage) == {"choices": [], "usage": usage}
